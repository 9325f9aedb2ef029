// In-process sanity check of a cubin before it is stored or loaded.
#pragma once

#include <string>
#include <string_view>

namespace kjit {

struct CubinInfo {
  int sm = 0;           // SM number from e_flags, e.g. 90
  int abi_version = 0;  // e_ident[EI_ABIVERSION]
};

// Parses the ELF header: ELF64, little-endian, e_machine == EM_CUDA (190). Returns false and
// sets `why` if it isn't a cubin.
bool inspect_cubin(std::string_view bytes, CubinInfo& info, std::string& why);

// True if `bytes` is a cubin for exactly SM `sm`; otherwise false with the reason in `why`.
bool check_cubin(std::string_view bytes, int sm, std::string& why);

} // namespace kjit
