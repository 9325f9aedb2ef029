// The parameter layout of each kernel of a cubin, as the launch check needs it.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace kjit::driver {

struct KernelLayout {
  std::vector<std::size_t> sizes;  // of each parameter, in order
};

// The layout of every kernel in `cubin`, by (lowered) name; empty when it can't be read.
std::map<std::string, KernelLayout> kernel_layouts(std::string_view cubin);

} // namespace kjit::driver
