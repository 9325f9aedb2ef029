// libFuzzer target: every setting's value parser (strict booleans, sizes, durations, arches…)
// either accepts a value or throws ConfigError, for any text.
#include <kjit/config.hpp>
#include <kjit/error.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
  const std::string text(reinterpret_cast<const char*>(data), size);
  if (text.find('\0') != std::string::npos) {
    return 0;  // environment values can't hold NUL
  }
  try {
    kjit::parse_bool(text, "FUZZ");
  } catch (const kjit::ConfigError&) {
  }
  try {
    kjit::parse_size(text, "FUZZ");
  } catch (const kjit::ConfigError&) {
  }
  try {
    kjit::parse_seconds(text, "FUZZ");
  } catch (const kjit::ConfigError&) {
  }
  // The whole table, through the environment, one variable at a time.
  for (const auto& setting : kjit::settings()) {
    ::setenv(setting.variable.c_str(), text.c_str(), 1);
    try {
      kjit::current_config();
    } catch (const kjit::ConfigError&) {
    }
    ::unsetenv(setting.variable.c_str());
  }
  return 0;
}
