// libFuzzer target: the include scanner (deps/include_scan.hpp, read only here) on arbitrary text,
// and the absolute-name check with the macros that text defines.
#include "deps/formed_names.hpp"
#include "deps/include_scan.hpp"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
  const std::string text(reinterpret_cast<const char*>(data), size);
  const std::map<std::string, std::string> defines{{"HEADER", "\"h.h\""}, {"EMPTY", ""}};
  kjit::deps::ScanMacros macros;
  const auto includes = kjit::deps::scan_includes(text, defines, &macros);
  (void)includes;
  const kjit::deps::OpenEnds ends(macros);
  (void)kjit::deps::may_form_absolute_name(text, ends);
  return 0;
}
