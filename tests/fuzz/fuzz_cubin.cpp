// libFuzzer target: the ELF/cubin readers (rtc/elf_view.cpp, cubin.cpp, cubin_reader.cpp) read
// bytes from the store, bundles, the remote tier and user files: any bytes must give a result or
// a typed error (kjit::Error), never a crash, an over-read (ASan) or undefined behaviour (UBSan).
#include "rtc/elf_view.hpp"

#include <kjit/cubin.hpp>
#include <kjit/error.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
  using namespace kjit;
  // An exact-size copy: ASan sees a read one byte past the input.
  const std::vector<char> copy(data, data + size);
  const std::string_view bytes(copy.data(), copy.size());
  std::string why;
  CubinInfo info;
  const bool whole = inspect_cubin(bytes, info, why);
  const bool header = rtc::check_cubin_header(bytes, info.sm, why);
  if (whole && !header) {
    __builtin_trap();  // the header check accepts every cubin the full check accepts
  }
  check_cubin(bytes, 90, why);
  if (const auto view = rtc::ElfView::parse(bytes, why)) {
    for (const auto& section : view->sections()) {
      if (section.bytes.size() > size) {
        __builtin_trap();
      }
    }
  }
  try {
    const std::vector<KernelInfo> kernels = read_kernels(bytes);
    if (!whole) {
      __builtin_trap();  // read_kernels accepted what inspect_cubin refused
    }
  } catch (const Error&) {
  }
  try {
    cubin_functions(bytes);
  } catch (const Error&) {
  }
  return 0;
}
