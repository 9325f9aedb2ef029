// This process's manifests (the headers a program read, by manifest key: docs/includes.md), kept
// ahead of the store, and the provisional keys of predictions not validated yet. Its own lock;
// the work on it is Cache::Impl's (includes.cpp, manifest_record.cpp, predicted_hit.cpp).
#pragma once

#include "deps/manifest.hpp"
#include "deps/resolver.hpp"
#include "util/hash.hpp"
#include "util/test_hook.hpp"

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <vector>
#include <string>
#include <utility>

namespace kjit::cache {

struct KnownManifest {
  deps::Manifest entries;
  std::string context;  // the resolution context it was made in (deps::SearchContext::text())
  // Which state of the book's copy this is (ManifestBook::next_version; 0: none of the book's, or
  // read from the store): a manifest made ahead from a copy is stored only if the book still
  // holds that copy (PackedManifest).
  std::uint64_t version = 0;
  // The checksum of the store's row that holds this copy (stored from it), or zeros: not known to
  // be stored. A lookup this copy does not serve reads no other copy from the store while the row
  // is still that one (a vendored CCCL's manifest is 3–4 MB of text, 5–12 ms to unpack and decode).
  util::Checksum stored_row{};
  deps::LetGo let_go;  // the states it let go (a full manifest is outdated only if none may hold)
  // The store's rows whose entries and states this copy took in (decoded from, merged, stored
  // from): not merged again. A copy on a store it cannot write never has its own row stored, and
  // merging its base row at each record brought back the states it had let go (found by a review).
  std::set<util::Checksum> rows;
  // Only the newest entry of the store's row `stored_row` (a hit read no more of it): served while
  // it holds unchanged; anything else reads the row whole. Never stored, never a record's base.
  bool partial = false;
  // A partial copy read from the manifest's head: the folders of its newest entry whose absent
  // names it lacks, held only while their stamps are as recorded.
  std::set<std::string> elided_dirs;
  // When set, `entries` holds the newest entry alone, and the whole manifest is this row value
  // (store::packed()), which the record of a miss packed ahead: read an entry at a time where the
  // newest does not hold, decoded whole where a record needs it (materialize()). A miss's record
  // decoded the store's row after NVRTC to keep a copy that a one-shot process never reads (a
  // vendored CCCL's 8 entries: ≈ 14 ms of its 20, then copied into the book).
  std::shared_ptr<const std::string> packed_whole;
  // The head of `packed_whole` (deps/manifest_head.hpp, packed), made with it; empty: none.
  std::shared_ptr<const std::string> packed_head;
};

// A manifest of the store found outdated (every resolution has a header whose content changed or
// vanished) by a lookup that then compiles ahead: the row's key and checksum. The preparing thread
// is told (speculation.hpp, OutdatedRowScope): it asks the row's checksum again, not its text.
struct OutdatedRow {
  util::Sha256 manifest_key{};
  util::Checksum row{};
};

// A manifest encoded and packed beside NVRTC, by the thread that prepares a miss compiled ahead
// (cache/speculation.hpp): an entry put first in the book's copy of `version`, or else in the
// store's row of checksum `stored_row`, or alone (0 and zeros). The compile's record_manifest()
// takes `packed` for its commit when it records the same entry (its digest, `entry`: not a copy,
// ≈ 3 MB for a vendored CCCL) in that same manifest; else the manifest is encoded and packed after
// NVRTC, on the caller's path (a vendored CCCL's: 2.8 MB of text, ≈ 6 ms).
struct PackedManifest {
  util::Sha256 key{};
  std::string context;
  std::uint64_t version = 0;
  util::Checksum stored_row{};
  util::Checksum entry{};
  std::string packed;
  std::string head;               // its head (deps/manifest_head.hpp), packed
  std::set<util::Checksum> rows;  // the store's rows the manifest took in (KnownManifest::rows)
};

struct ManifestBook {
  std::mutex mutex;                              // guards everything below but any_provisional
  std::map<util::Sha256, KnownManifest> known;   // this process's copy, ahead of the store
  std::set<util::Sha256> unsaved;                // new resolutions, stored with the next commit
  std::map<util::Sha256, std::string> packed;    // an unsaved one's row value, packed ahead
  std::uint64_t next_version = 1;                // KnownManifest::version
  std::set<util::Sha256> provisional;            // keys from an unvalidated prediction: never looked up
  std::atomic<bool> any_provisional{false};      // lets the hot path skip the lock
  // The prediction behind a provisional key, handed to its compile (so the headers are read,
  // hashed and scanned once); a few at most.
  std::map<util::Sha256, std::shared_ptr<deps::Resolver>> predictions;
  // manifest key → the meta rows (key, value) that let later compiles of its program (its seed's
  // row) and other programs of its library start from the resolution recorded there
  // (closure_seed.cpp), stored with that manifest's commit.
  std::map<util::Sha256, std::vector<std::pair<std::string, std::string>>> closure_rows;
};

// Notes that `manifest` holds all of the store's row of checksum `row` (KnownManifest::rows; zeros:
// none).
void took_in(KnownManifest& manifest, const util::Checksum& row);
// `manifest` whole: its packed row decoded, when it holds that alone (KnownManifest::packed_whole).
// One that does not decode keeps its newest entry, and may have let any state go.
void materialize(KnownManifest& manifest);

// Test hook: how many manifests packed ahead (PackedManifest) this process stored as they were.
KJIT_TEST_HOOK std::uint64_t manifests_packed_ahead() noexcept;

} // namespace kjit::cache
