// Reading cubins without a GPU: a sanity check before one is stored or loaded, and each kernel's
// resources and parameter layout from the ELF (.nv.info sections, symbol table).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kjit {

struct CubinInfo {
  int sm = 0;           // SM number from e_flags, e.g. 90
  int abi_version = 0;  // e_ident[EI_ABIVERSION]
};

// Parses and checks the whole ELF structure: header (ELF64, little-endian, e_machine == EM_CUDA),
// section and program header tables, every section's and segment's range, string and symbol
// tables, overflow-safe. Returns false and sets `why` if it isn't a well-formed cubin.
bool inspect_cubin(std::string_view bytes, CubinInfo& info, std::string& why);

// True if `bytes` is a well-formed cubin for exactly SM `sm`; otherwise false with the reason in `why`.
bool check_cubin(std::string_view bytes, int sm, std::string& why);

// One kernel parameter as the compiler laid it out in the parameter constant bank.
struct KernelParam {
  std::uint32_t index = 0;   // position in the kernel's parameter list
  std::uint32_t offset = 0;  // bytes from the start of the parameter block
  std::uint32_t size = 0;    // bytes
};

// One kernel (entry function) of a cubin and the resources it uses.
struct KernelInfo {
  std::string name;                       // mangled (lowered) name, as in the symbol table
  int registers = 0;                      // EIATTR_REGCOUNT
  std::uint32_t static_shared_bytes = 0;  // the kernel's own __shared__ data (not the reserved 1 KiB)
  std::uint32_t local_bytes = 0;          // per-thread stack frame (EIATTR_FRAME_SIZE)
  std::uint32_t const_bytes = 0;          // the module's user __constant__ data (.nv.constant3)
  std::uint32_t max_threads = 0;          // EIATTR_MAX_THREADS, x*y*z (0 = not set)
  std::vector<KernelParam> params;        // EIATTR_KPARAM_INFO, sorted by index
  std::uint32_t param_bytes = 0;          // total size of the parameter block (EIATTR_PARAM_CBANK)
  std::uint32_t max_stack_bytes = 0;      // per-thread stack including callees (EIATTR_MAX_STACK_SIZE)
};

// Every kernel (entry function) of a cubin with its resources, from the ELF (.nv.info.* sections,
// symbol table), in symbol table order. Throws kjit::Error naming what is malformed. No GPU needed.
std::vector<KernelInfo> read_kernels(std::string_view cubin);

// Names of every function in the cubin (kernels and device helpers that stayed calls), in symbol
// table order. Throws kjit::Error if the cubin is malformed.
std::vector<std::string> cubin_functions(std::string_view cubin);

} // namespace kjit
