// The tiers below the store (bundles, then the remote): opened from the config, asked in order,
// hits verified and promoted; the fleet's compile lease; compiled binaries uploaded to the remote.
#include "cache/cache_impl.hpp"

#include "bundle/bundle_tier.hpp"
#include "config/log.hpp"
#include "remote/remote_tier.hpp"
#include "store/meta_keys.hpp"
#include "store/record.hpp"

namespace kjit {

namespace {

// What tier_reported holds once a damaged record of `p` in `tier` was logged (an unreadable
// tier: its name and why).
std::string damaged_record(const tier::Tier& tier, const PreparedProgram& p)
{
  return tier.name() + p.key();
}

} // namespace

void Cache::Impl::open_tiers()
{
  for (const std::string& path : config.bundles) {
    tiers.push_back(bundle::open_tier(path));
  }
  if (!config.remote_cache.empty()) {
    // Checked by the settings table; hiredis is loaded on the first lookup, not here.
    std::string why;
    if (std::vector<remote::RedisUrl> urls = remote::configured_urls(config, why); !urls.empty()) {
      auto tier = std::make_unique<remote::RemoteTier>(std::move(urls));
      remote = tier.get();
      tiers.push_back(std::move(tier));
    } else {
      cache::warn_once(why + "; the remote cache is not used");
    }
  }
  if (!store || !store->writable()) {
    return;
  }
  // The bundles' toolchain identities let an empty store find the key's toolchain part without
  // loading NVRTC (a fact about those library files, so adding a missing one is always safe).
  std::vector<store::Store::Row> rows;
  for (const auto& tier : tiers) {
    for (bundle::MetaRow& row : bundle::tier_meta(*tier)) {
      if (row.key.rfind(store::k_toolchain_prefix, 0) == 0 && !store->get(store::Table::meta, row.key)) {
        rows.push_back({store::Table::meta, std::move(row.key), std::move(row.value)});
      }
    }
  }
  store->put(rows);
}

std::optional<store::Entry> Cache::Impl::load_from_tiers(const util::Sha256& key, const PreparedProgram& p,
                                                         bool* remote_hit)
{
  for (const auto& tier : tiers) {
    const bool is_remote = tier.get() == remote;
    if (auto entry = take_answer(*tier, tier->get(key), key, p)) {
      if (remote_hit != nullptr) {
        *remote_hit = is_remote;
      }
      return entry;
    }
  }
  return std::nullopt;
}

std::optional<store::Entry> Cache::Impl::take_answer(tier::Tier& tier, tier::TierAnswer answer,
                                                     const util::Sha256& key, const PreparedProgram& p)
{
  const bool is_remote = &tier == remote;
  if (answer.kind == tier::TierAnswer::Kind::none) {
    if (is_remote) {
      count(&CacheStats::remote_misses);
    }
    return std::nullopt;
  }
  if (is_remote && answer.kind == tier::TierAnswer::Kind::failure) {
    count(&CacheStats::remote_errors);  // the tier warned once for this outage
    return std::nullopt;
  }
  std::string why = answer.why;
  std::optional<store::Entry> entry;
  if (answer.kind == tier::TierAnswer::Kind::record) {
    if (is_remote) {
      count(&CacheStats::remote_bytes_read, nullptr, 0, answer.bytes.size());
    }
    entry = store::decode_record(answer.bytes, key, store::Sections::all, why);
  }
  if (!entry) {
    count(&CacheStats::tier_errors);
    if (is_remote) {
      count(&CacheStats::remote_errors);
    }
    // An unreadable tier is logged once; a damaged record once per key.
    const std::string what =
      answer.kind == tier::TierAnswer::Kind::failure ? tier.name() + why : damaged_record(tier, p);
    std::lock_guard lock(flight_mutex);
    if (tier_reported.insert(what).second) {
      log::line("warning: " + tier.name() + ": " + why + " (" + p.program().name + ", " + p.arch().str() +
                "); treated as a miss");
    }
    return std::nullopt;
  }
  count(is_remote ? &CacheStats::remote_hits : &CacheStats::bundle_hits, &CacheStats::compile_ms_saved,
        entry->binary.timings.total_ms);
  if (entry->kind == store::EntryKind::failure) {
    count(&CacheStats::failed_hits);
  }
  try {
    persist(key, p, *entry);  // promoted: the next process finds it in its own store
  } catch (const Error& e) {
    log::line("warning: cannot copy a hit of " + tier.name() + " into the store: " + e.what());
  }
  return entry;
}

std::optional<store::Entry> Cache::Impl::await_fleet(const util::Sha256& key, const PreparedProgram& p,
                                                     remote::Lease& lease)
{
  if (remote == nullptr) {
    return std::nullopt;
  }
  {
    std::lock_guard lock(flight_mutex);
    if (tier_reported.count(damaged_record(*remote, p)) != 0) {
      return std::nullopt;  // its record there is damaged: compiled here, and the upload replaces it
    }
  }
  const auto wait_ms = static_cast<std::int64_t>(config.compile_lock_timeout_s * 1000);
  remote::LeaseAnswer answer = remote->lease(key, wait_ms);
  if (answer.kind == remote::LeaseAnswer::Kind::held) {
    lease = std::move(answer.lease);
  } else if (answer.kind == remote::LeaseAnswer::Kind::record) {
    tier::TierAnswer record;
    record.kind = tier::TierAnswer::Kind::record;
    record.bytes = std::move(answer.bytes);
    return take_answer(*remote, std::move(record), key, p);  // a damaged one: compiled here
  } else if (answer.timed_out) {
    cache::warn_once("waited " + std::to_string(config.compile_lock_timeout_s) + " s (KJIT_COMPILE_LOCK_TIMEOUT) for " +
                     remote->name() + " to get a kernel another node compiles; compiling it here");
  }
  return std::nullopt;
}

void Cache::Impl::upload(const util::Sha256& key, const store::Entry& entry, remote::Lease lease) noexcept
{
  if (remote == nullptr || entry.kind != store::EntryKind::binary) {
    return;  // a lease is released by its destructor: the waiting nodes compile
  }
  try {
    // Self-contained (headers inline): another node's store has none of this one's blobs.
    remote->upload(key, store::encode_record(entry, key, store::HeaderStorage::inline_content), std::move(lease));
  } catch (const std::exception& e) {
    cache::warn_once(std::string("cannot upload a compiled kernel to the remote cache: ") + e.what());
  }
}

} // namespace kjit
