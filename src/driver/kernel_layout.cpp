// Kernel parameter layouts for the launch check, from the cubin reader (.nv.info sections).
#include "driver/kernel_layout.hpp"

#include <kjit/cubin.hpp>
#include <kjit/error.hpp>

namespace kjit::driver {

std::map<std::string, KernelLayout> kernel_layouts(std::string_view cubin)
{
  std::map<std::string, KernelLayout> layouts;
  std::vector<KernelInfo> kernels;
  try {
    kernels = read_kernels(cubin);
  } catch (const Error&) {
    return layouts;  // the driver judges the image when it loads it; there is just no check
  }
  for (const KernelInfo& kernel : kernels) {
    KernelLayout layout;
    bool complete = true;
    for (std::size_t i = 0; i < kernel.params.size(); ++i) {
      complete = complete && kernel.params[i].index == i;
      layout.sizes.push_back(kernel.params[i].size);
    }
    if (complete) {  // an index missing from .nv.info: better no check than a wrong one
      layouts.emplace(kernel.name, std::move(layout));
    }
  }
  return layouts;
}

} // namespace kjit::driver
