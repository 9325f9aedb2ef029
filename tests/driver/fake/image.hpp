// The fake driver's view of a module image: kernels and parameter layouts read from a cubin's
// ELF tables and .nv.info sections, or from a PTX text's .entry lines.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace fake_cuda {

struct Param {
  std::size_t offset = 0;
  std::size_t size = 0;
};

struct Kernel {
  std::string name;
  std::vector<Param> params;  // by ordinal
  std::size_t param_bytes = 0;
  int registers = 0;
  int static_shared = 0;
};

// The kernels of a cubin (checked ELF header, EM_CUDA) or PTX image; false with `why` otherwise.
// A cubin is taken by its length from the ELF headers, as the real driver does.
bool read_image(const void* image, std::vector<Kernel>& kernels, bool& is_ptx, std::string& why);

} // namespace fake_cuda
