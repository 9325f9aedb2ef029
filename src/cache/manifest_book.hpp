// This process's manifests (the headers a program read, by manifest key: docs/includes.md), kept
// ahead of the store, and the provisional keys of predictions not validated yet. Its own lock;
// the work on it is Cache::Impl's (includes.cpp, predicted_hit.cpp).
#pragma once

#include "deps/manifest.hpp"
#include "deps/resolver.hpp"
#include "util/hash.hpp"

#include <atomic>
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
};

struct ManifestBook {
  std::mutex mutex;                              // guards everything below but any_provisional
  std::map<util::Sha256, KnownManifest> known;   // this process's copy, ahead of the store
  std::set<util::Sha256> unsaved;                // new resolutions, stored with the next commit
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

} // namespace kjit::cache
