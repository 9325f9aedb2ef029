// libFuzzer target: program options as NVRTC reads them (rtc/option_spelling.cpp) and as keys
// name them (cache::normalize_options). Any options must give a result, never a crash; what
// as_nvrtc_reads returns is read alike by it again (its documented contract), and the options
// that end NVRTC's process are found without a crash.
#include "cache/key.hpp"
#include "rtc/option_spelling.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
  using namespace kjit;
  // Options separated by '\x01' (NUL bytes stay inside an option).
  std::vector<std::string> options(1);
  for (std::size_t i = 0; i < size; ++i) {
    if (data[i] == 1) {
      options.emplace_back();
    } else {
      options.back() += static_cast<char>(data[i]);
    }
  }
  const std::vector<std::string> once = rtc::as_nvrtc_reads(options);
  if (rtc::as_nvrtc_reads(once) != once) {
    __builtin_trap();
  }
  rtc::spelled_otherwise(options);
  rtc::option_that_aborts_nvrtc(options, "fuzz.cu");
  rtc::option_that_aborts_nvrtc(once, "fuzz.cu");
  cache::normalize_options(once);
  return 0;
}
