// libFuzzer target: manifest decoding (deps/manifest.hpp, read only here) on arbitrary bytes.
#include "deps/manifest.hpp"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
  kjit::deps::LetGo let_go;
  const auto manifest = kjit::deps::decode_manifest(std::string_view(reinterpret_cast<const char*>(data), size), {}, &let_go);
  if (manifest) {
    // A decoded manifest must survive its own encoding, with the states it let go.
    kjit::deps::LetGo again;
    const auto decoded = kjit::deps::decode_manifest(kjit::deps::encode_manifest(*manifest, {}, let_go), {}, &again);
    if (!decoded || decoded->size() != manifest->size() || again.tracked != let_go.tracked ||
        again.states.size() != let_go.states.size()) {
      __builtin_trap();
    }
  }
  return 0;
}
