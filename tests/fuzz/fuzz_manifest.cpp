// libFuzzer target: manifest decoding (deps/manifest.hpp, read only here) on arbitrary bytes.
#include "deps/manifest.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

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
    // Read again, the entries that list its newest's first header with other content passed over:
    // every entry is read or passed over, and the reader ends intact.
    if (!manifest->empty() && !manifest->front().headers.empty()) {
      const std::string text = kjit::deps::encode_manifest(*manifest, {}, let_go);
      const std::vector<kjit::deps::ChangedHeader> changed{{manifest->front().headers.front().path, std::nullopt}};
      kjit::deps::ManifestReader reader(text, {});
      std::size_t seen = 0;
      while (reader.ok() && !reader.at_end()) {
        if (!reader.skip_changed(changed) && !reader.next()) {
          __builtin_trap();
        }
        ++seen;
      }
      if (!reader.ok() || seen != manifest->size()) {
        __builtin_trap();
      }
    }
  }
  // Arbitrary bytes: passed over or read, never out of bounds.
  kjit::deps::ManifestReader raw(std::string_view(reinterpret_cast<const char*>(data), size), {});
  const std::vector<kjit::deps::ChangedHeader> any{{"/a.h", std::nullopt}};
  for (int i = 0; i < 64 && raw.ok() && !raw.at_end(); ++i) {
    if (!raw.skip_changed(any)) {
      (void)raw.next();
    }
  }
  return 0;
}
