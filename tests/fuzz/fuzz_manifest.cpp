// libFuzzer target: manifest decoding (deps/manifest.hpp, read only here) on arbitrary bytes.
#include "deps/manifest.hpp"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
  const auto manifest = kjit::deps::decode_manifest(std::string_view(reinterpret_cast<const char*>(data), size));
  if (manifest) {
    // A decoded manifest must survive its own encoding.
    if (!kjit::deps::decode_manifest(kjit::deps::encode_manifest(*manifest))) {
      __builtin_trap();
    }
  }
  return 0;
}
