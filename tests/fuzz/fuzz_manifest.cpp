// libFuzzer target: manifest decoding (deps/manifest.hpp, read only here) on arbitrary bytes.
#include "deps/manifest.hpp"
#include "util/hash.hpp"

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
  // Arbitrary bytes as a manifest's body, under its own checksum (random bytes never pass one): its
  // entries passed over or read, never out of bounds; read again from the first after a rewind.
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  const std::string text = "kjit-manifest 8 " + kjit::util::to_hex(kjit::util::checksum(body)) + "\n" + std::string(body);
  kjit::deps::ManifestReader raw(text, {});
  const std::vector<kjit::deps::ChangedHeader> any{{"/a.h", std::nullopt}, {"a.h", kjit::util::Sha256{}}};
  for (int round = 0; round < 2; ++round) {
    for (int i = 0; i < 64 && raw.ok() && !raw.at_end(); ++i) {
      if (!raw.skip_changed(any) && !raw.pass_over()) {
        (void)raw.next();
      }
    }
    raw.rewind();
  }
  return 0;
}
