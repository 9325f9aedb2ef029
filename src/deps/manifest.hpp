// Manifests (ccache's direct mode): for one (source, options, toolchain), the disk headers a
// compile used and the folders whose contents could shadow them, with their stat() stamps.
#pragma once

#include "deps/resolver.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kjit::deps {

// Most recent first; at most k_manifest_entries are kept per key.
using Manifest = std::vector<Resolution>;
constexpr std::size_t k_manifest_entries = 8;

// Text form with an XXH3 checksum line; a damaged manifest decodes to nullopt (then the
// includes are resolved again, so a bad manifest costs time, never a wrong kernel).
// `context` is the resolution context (SearchContext::text()); a manifest decoded with another
// context is nullopt.
std::string encode_manifest(const Manifest& manifest, const std::string& context = {});
std::optional<Manifest> decode_manifest(std::string_view bytes, const std::string& context = {});
// How many manifests decode_manifest() was asked to decode in this process (a test checks what a
// miss reads).
std::uint64_t manifests_decoded() noexcept;

struct ValidationCounters {
  std::size_t stats = 0;     // stat() calls on header files
  std::size_t rehashes = 0;  // headers read and hashed again because their stamp changed
};

enum class Validation {
  unchanged,      // every stamp as recorded
  same_content,   // some stamps changed, contents did not (the entry's stamps were updated; a
                  // stamp too new to stand for its content is not taken, and alone gives unchanged)
  changed,        // its headers hold, but a probed folder changed: a search may find the same
                  // headers again (a file that no include names appeared in an -I folder)
  headers_changed,  // a header's content changed, or one vanished: no entry of these headers is
                    // what is on disk now
};

// Whether an entry so checked still stands for the disk (its headers and folders as recorded).
constexpr bool holds(Validation validation)
{
  return validation == Validation::unchanged || validation == Validation::same_content;
}

// Checks one manifest entry against the file system: a stat() per header and per probed folder;
// a header whose stamp changed is hashed again. The headers first: a changed folder says nothing
// of them.
Validation validate(Resolution& entry, ValidationCounters& counters);

} // namespace kjit::deps
