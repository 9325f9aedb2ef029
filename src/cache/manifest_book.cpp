// The book's copies of manifests (manifest_book.hpp): what they took in, and a packed one decoded.
#include "cache/manifest_book.hpp"

#include "store/compress.hpp"

#include <utility>

namespace kjit::cache {

void took_in(KnownManifest& manifest, const util::Checksum& row)
{
  if (row == util::Checksum{}) {
    return;
  }
  if (manifest.rows.size() >= 16) {  // a few at most: a long-lived Cache stores one per compile
    manifest.rows.erase(manifest.rows.begin());
  }
  manifest.rows.insert(row);
}

void materialize(KnownManifest& manifest)
{
  if (!manifest.packed_whole) {
    return;
  }
  const auto text = store::unpacked(*manifest.packed_whole);
  deps::LetGo let_go;
  if (auto decoded = text ? deps::decode_manifest(*text, manifest.context, &let_go) : std::nullopt;
      decoded && !decoded->empty()) {
    manifest.entries = std::move(*decoded);
    manifest.let_go = std::move(let_go);
  } else {
    manifest.let_go = deps::LetGo{false, {}};
  }
  manifest.packed_whole.reset();
  manifest.packed_head.reset();
}


} // namespace kjit::cache
