// Cache::Impl: the state behind kjit::Cache, shared by cache.cpp, lookup.cpp, includes.cpp and
// explain.cpp.
#pragma once

#include <kjit/cache.hpp>
#include <kjit/error.hpp>

#include "cache/cache_dir.hpp"
#include "cache/key.hpp"
#include "cache/memory_tier.hpp"
#include "cache/tier.hpp"
#include "deps/manifest.hpp"
#include "store/entry.hpp"
#include "store/store.hpp"

#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <unistd.h>

namespace kjit {

namespace cache {
// Thrown inside the cache when a tracked header changed between prepare() and compile: the
// program is prepared again. Never leaves the library.
struct HeadersChanged {};
} // namespace cache

struct Cache::Impl {
  Config config;
  cache::CacheDir dir;
  std::shared_ptr<store::Store> store;  // null without a disk tier
  cache::MemoryTier memory;
  std::vector<std::unique_ptr<cache::Tier>> tiers;  // read-only tiers after the store (bundles), in order

  std::mutex context_mutex;
  std::optional<cache::KeyContext> context;

  std::mutex manifest_mutex;
  std::map<util::Sha256, deps::Manifest> manifests;  // this process's copy, ahead of the store
  std::set<util::Sha256> unsaved_manifests;          // new resolutions, stored with the next commit

  std::mutex flight_mutex;
  std::map<util::Sha256, std::shared_future<cache::Result>> in_flight;
  std::set<util::Sha256> reported;  // quarantined keys already reported
  std::set<std::string> tier_reported;  // lower-tier problems already logged (tier + what)

  mutable std::mutex stats_mutex;
  CacheStats stats;

  explicit Impl(const Config& c) : config(c), memory(c.memory_limit) {}
  ~Impl();  // usage_log.cpp: appends this cache's lookup counts to the folder's usage log
  pid_t creator = ::getpid();

  void count(std::uint64_t CacheStats::*counter, double CacheStats::*ms = nullptr, double value = 0);
  const cache::KeyContext& key_context();
  void verbose(const char* what, const PreparedProgram& p, double ms);

  // includes.cpp: the disk headers of a program, from a valid manifest or by resolving them.
  deps::Resolution includes_for(const util::Sha256& direct_key, const Program& program, const Arch& arch);
  // Keeps the manifest in memory; `now` also stores it, else it waits for take_unsaved_manifest().
  void save_manifest(const util::Sha256& direct_key, const deps::Manifest& manifest, bool now);
  // The store row of a manifest not stored yet, if any (and forgets that it is unsaved).
  std::optional<store::Store::Row> take_unsaved_manifest(const PreparedProgram& prepared);

  // lookup.cpp: the disk tier and the compile path.
  std::optional<store::Entry> load(const util::Sha256& key, const PreparedProgram& prepared);
  cache::Result load_or_compile(const util::Sha256& key, const PreparedProgram& prepared);
  store::Entry compile_entry(const PreparedProgram& prepared);
  void persist(const util::Sha256& key, const PreparedProgram& prepared, const store::Entry& entry);

  // tiers.cpp: the tiers below the store.
  void open_tiers();
  // The entry from the first tier that has a good record for `key`, promoted to the store;
  // failures and damaged records are counted and logged, never thrown.
  std::optional<store::Entry> load_from_tiers(const util::Sha256& key, const PreparedProgram& prepared);
};

// The bytes of a digest, as LMDB keys them.
inline std::string_view bytes_of(const util::Sha256& digest)
{
  return {reinterpret_cast<const char*>(digest.data()), digest.size()};
}

} // namespace kjit
