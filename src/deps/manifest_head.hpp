// A manifest's head: what a lookup needs of a manifest when its newest entry decides, without the
// rest (docs/cache-format.md, "Manifest heads"). A vendored CCCL's manifest of 8 entries is 6.4 MB
// of text, 2.4 MB of it the names the vendored tree's folders were searched for in vain: a hit
// unpacked, checked and decoded most of it (8 of its 16 ms), and so did an edit's check before
// NVRTC. The head holds the newest entry without the absent names of folders watched whole (any
// change of one is a change: its names are never asked) nor of a folder past
// k_head_absent_bytes (elided: a change there reads the manifest), and of each other entry the
// content it read otherwise: an edit that every other entry read otherwise is outdated from the
// head alone.
#pragma once

#include "deps/manifest.hpp"
#include "util/hash.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace kjit::deps {

// A folder not watched whole whose absent names take more than this (escaped) is left out of the
// head's newest entry: a lookup that finds it changed reads the manifest. (A vendored CCCL's
// program folder, the working directory: 21 KB, changed by every file made there.)
constexpr std::size_t k_head_absent_bytes = 64 * 1024;
// An entry that read more than this many of the newest's headers otherwise is "many": the head
// can't tell an edit's header from the others for it.
constexpr std::size_t k_head_other_headers = 64;

// How another entry of the manifest read the newest entry's headers.
struct OtherEntry {
  bool many = false;                                 // more than k_head_other_headers: not listed
  std::map<std::string, util::Sha256> read_otherwise;  // path → the content it read there
  std::set<std::string> lacks;                       // paths it did not read
};

struct ManifestHead {
  Resolution newest;         // the folders of elided_dirs left out
  std::set<std::string> elided_dirs;  // the newest's folders whose absent names are not here
  std::vector<OtherEntry> others;     // the manifest's other entries, newest first
  LetGo let_go;
};

// The head of `manifest` (newest first, not empty) in `context`, whose row's checksum is `row`.
std::string encode_manifest_head(const Manifest& manifest, const std::string& context, const LetGo& let_go,
                                 const util::Checksum& row);
// nullopt: damaged, of another format or context, or the head of another row than the one of
// checksum `row` (told before its entry is decoded).
std::optional<ManifestHead> decode_manifest_head(std::string_view text, const std::string& context,
                                                 const util::Checksum& row);

// How many heads this process decoded (a test checks that a lookup was decided by one).
std::uint64_t manifest_heads_decoded() noexcept;

// Whether every other entry of `head` read the header at `path` with other content than `now`
// (nullopt: the file is gone), as ManifestReader::skip_changed() tells it: then none of them holds.
bool others_read_otherwise(const ManifestHead& head, const std::string& path, const std::optional<util::Sha256>& now);

} // namespace kjit::deps
