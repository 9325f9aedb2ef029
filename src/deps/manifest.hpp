// Manifests (ccache's direct mode): for one (source, options, toolchain), the disk headers a
// compile used and the folders whose contents could shadow them, with their stat() stamps.
#pragma once

#include "deps/resolver.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kjit::deps {

// Most recent first; at most k_manifest_entries are kept per key.
using Manifest = std::vector<Resolution>;
constexpr std::size_t k_manifest_entries = 8;

// What a manifest knows of the states it let go (its oldest entries, dropped to keep
// k_manifest_entries), so that a full manifest none of whose entries holds can still tell that no
// entry compiled here holds what is on disk now (a project's edit-compile loop, past its eighth
// edit), as one with room can: for each state, the headers it read that the newest entry, when it
// was let go, read with other content or not at all (path and SHA-256). A state whose every such
// header has that content now may hold; so may one of none, or of more than k_let_go_headers
// (recorded as none).
struct LetGoState {
  std::vector<std::pair<std::string, util::Sha256>> headers;
};
struct LetGo {
  // false: states may have gone unrecorded (a manifest of format 7 or before, an undecodable one,
  // or more than k_let_go_states let go): any may hold.
  bool tracked = true;
  std::vector<LetGoState> states;  // most recent first
};
constexpr std::size_t k_let_go_states = 512;
constexpr std::size_t k_let_go_headers = 16;

// Moves the entries of `manifest` past k_manifest_entries into `let_go`.
void let_go_of_oldest(Manifest& manifest, LetGo& let_go);
// Adds `state` to `let_go` (first when `newest`, else last) unless it holds the same already;
// past k_let_go_states the oldest go, and `let_go` is no longer tracked.
void keep_let_go_state(LetGo& let_go, LetGoState state, bool newest);
// Whether a state `let_go` let go may hold what is on disk now: reads and hashes each header its
// states name (once per path) until one may.
bool let_go_may_hold(const LetGo& let_go);

// Text form with an XXH3 checksum line; a damaged manifest decodes to nullopt (then the
// includes are resolved again, so a bad manifest costs time, never a wrong kernel).
// `context` is the resolution context (SearchContext::text()); a manifest decoded with another
// context is nullopt. `let_go`, when given, is set to the states it let go.
std::string encode_manifest(const Manifest& manifest, const std::string& context = {}, const LetGo& let_go = {});
std::optional<Manifest> decode_manifest(std::string_view bytes, const std::string& context = {}, LetGo* let_go = nullptr);

// A header that validate() found with other content than an entry lists, or gone: its path and
// the SHA-256 of its content now (nullopt: gone, or unreadable).
struct ChangedHeader {
  std::string path;
  std::optional<util::Sha256> now;
};

// A manifest's text (encode_manifest()'s) read one entry at a time, in place, its checksum checked
// whole first: a lookup served by the newest entry decodes that one alone (a vendored CCCL's
// manifest of 8 entries is 6.4 MB of text, 1 691 headers an entry). `bytes` must outlive it.
class ManifestReader {
public:
  ManifestReader(std::string_view bytes, const std::string& context);
  // false: damaged, of another context or format, or an entry read so far did not decode.
  bool ok() const { return m_ok; }
  bool at_end() const { return m_at >= m_body.size(); }
  // The next entry, newest first; nullopt at the end, or when it does not decode (ok() then false).
  std::optional<Resolution> next();
  // Passes over the next entry, its headers not decoded, when it lists one of `changed` with other
  // content than that header has now: no such entry holds (an edit loop's manifest: each entry
  // lists the edited header, and decoding the 7 that follow the newest, 1 691 headers each, was
  // most of a miss's check before NVRTC). true: passed over; false: next() reads it.
  bool skip_changed(const std::vector<ChangedHeader>& changed);
  // Passes over the next entry, its headers not decoded; false at the end or where it does not decode.
  bool pass_over() { return read_entry(false).has_value(); }
  LetGo take_let_go() { return std::move(m_let_go); }
  // Back to the first entry, as constructed (to decode an entry passed over).
  void rewind();

private:
  std::optional<Resolution> read_entry(bool headers);
  std::size_t m_first_entry = 0;
  const char* m_magic = nullptr;
  std::string_view m_body;
  std::size_t m_at = 0;
  bool m_ok = false;
  LetGo m_let_go;
  // Each folder's absent names (empty: none), in order, in the entry read last and in the one
  // being read: "absent-same" shares the first of its path in the former.
  std::vector<std::pair<std::string, AbsentNames>> m_absent_before;
  std::vector<std::pair<std::string, AbsentNames>> m_absent;
};

// How many manifests (ManifestReader, decode_manifest()) this process was asked to decode, and how
// many of their entries it decoded (a test checks what a lookup reads).
std::uint64_t manifests_decoded() noexcept;
std::uint64_t manifest_entries_decoded() noexcept;

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
// of them. `changed`, when given, is set to the header that makes it headers_changed.
Validation validate(Resolution& entry, ValidationCounters& counters, ChangedHeader* changed = nullptr);

} // namespace kjit::deps
