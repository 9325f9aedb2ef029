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

// A __device__/__constant__ variable: its symbol, size and initial bytes (zeros if none).
struct Variable {
  std::string name;
  std::size_t size = 0;
  std::vector<unsigned char> init;
};

enum class Kind { cubin, ptx, fatbin };

// What loading an image for a device of compute capability `cc` gives.
enum class Outcome { ok, invalid_image, no_binary_for_gpu, invalid_ptx };

// The kernels of a cubin (checked ELF header, EM_CUDA), a fatbin (the cubin for `cc`, else its
// PTX) or a PTX image. A cubin is taken by its length from the ELF headers, as the real driver
// does. A cubin for another SM major or a newer minor is no_binary_for_gpu; PTX whose .target is
// newer than `cc` is invalid_ptx with a ptxas-like message in `why` (what the JIT's error log gets).
// Variables come from the symbol table (objects in .nv.global*, .nv.constant3) or PTX .global/.const.
Outcome read_image(const void* image, int cc, std::vector<Kernel>& kernels, std::vector<Variable>& variables,
                   Kind& kind, std::string& why);

} // namespace fake_cuda
