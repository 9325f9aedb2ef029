// Kernel parameter layouts for the launch check, from the cubin reader.
#include "driver/kernel_layout.hpp"

namespace kjit::driver {

std::map<std::string, KernelLayout> kernel_layouts(std::string_view cubin)
{
  std::map<std::string, KernelLayout> layouts;
  static_cast<void>(cubin);  // filled in from read_kernels() once the cubin reader lands
  return layouts;
}

} // namespace kjit::driver
