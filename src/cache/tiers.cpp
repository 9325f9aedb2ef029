// The walk over the tiers below the store (bundles, then the remote): opened from the config,
// asked in order, a hit verified and backfilled into the store, what this process compiled offered
// to each; and the remote's own fleet compile lease.
#include "cache/cache_impl.hpp"

#include "bundle/bundle_tier.hpp"
#include "config/log.hpp"
#include "remote/remote_tier.hpp"
#include "store/meta_keys.hpp"
#include "store/record.hpp"

namespace kjit {

namespace {

// What `reported` holds once a damaged record of `p` in `tier` was logged (an unreadable
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

std::optional<store::Entry> Cache::Impl::load_from_tiers(const util::Sha256& entry_key, const PreparedProgram& p,
                                                         Source& source)
{
  for (const auto& tier : tiers) {
    if (auto entry = take_answer(*tier, tier->get(entry_key), entry_key, p)) {
      source = tier->accounting().source;
      return entry;
    }
  }
  return std::nullopt;
}

std::optional<store::Entry> Cache::Impl::take_answer(tier::Tier& tier, tier::TierAnswer answer,
                                                     const util::Sha256& entry_key, const PreparedProgram& p)
{
  const tier::TierAccounting& counted = tier.accounting();
  const auto count_in = [this](std::uint64_t CacheStats::*counter, std::uint64_t by = 1) {
    if (counter != nullptr) {
      statistics.count(counter, nullptr, 0, by);
    }
  };
  if (answer.kind == tier::TierAnswer::Kind::none) {
    count_in(counted.misses);
    return std::nullopt;
  }
  std::string why = answer.why;
  std::optional<store::Entry> entry;
  if (answer.kind == tier::TierAnswer::Kind::failure) {
    count_in(counted.errors);
    if (answer.warned) {
      return std::nullopt;
    }
  } else {
    count_in(counted.bytes_read, answer.bytes.size());
    entry = store::decode_record(answer.bytes, entry_key, store::Sections::all, why);
    if (!entry) {
      // A damaged record is a tier error whichever tier held it, and one of that tier's errors.
      statistics.count(&CacheStats::tier_errors);
      if (counted.errors != &CacheStats::tier_errors) {
        count_in(counted.errors);
      }
    }
  }
  if (!entry) {
    // An unreadable tier is logged once; a damaged record once per key.
    const std::string what =
      answer.kind == tier::TierAnswer::Kind::failure ? tier.name() + why : damaged_record(tier, p);
    if (reported.first(what)) {
      log::line("warning: " + tier.name() + ": " + why + " (" + p.program().name + ", " + p.arch().str() +
                "); treated as a miss");
    }
    return std::nullopt;
  }
  statistics.count(counted.hits, &CacheStats::compile_ms_saved, entry->binary.timings.total_ms);
  if (entry->kind == store::EntryKind::failure) {
    statistics.count(&CacheStats::failed_hits);
  }
  try {
    persist(entry_key, p, *entry);  // backfilled: the next process finds it in its own store
  } catch (const Error& e) {
    log::line("warning: cannot copy a hit of " + tier.name() + " into the store: " + e.what());
  }
  return entry;
}

std::optional<store::Entry> Cache::Impl::await_fleet(const util::Sha256& entry_key, const PreparedProgram& p,
                                                     remote::Lease& lease)
{
  if (remote == nullptr) {
    return std::nullopt;
  }
  if (reported.seen(damaged_record(*remote, p))) {
    return std::nullopt;  // its record there is damaged: compiled here, and the upload replaces it
  }
  const auto wait_ms = static_cast<std::int64_t>(config.compile_lock_timeout_s * 1000);
  remote::LeaseAnswer answer = remote->lease(entry_key, wait_ms);
  if (answer.kind == remote::LeaseAnswer::Kind::held) {
    lease = std::move(answer.lease);
  } else if (answer.kind == remote::LeaseAnswer::Kind::record) {
    tier::TierAnswer record;
    record.kind = tier::TierAnswer::Kind::record;
    record.bytes = std::move(answer.bytes);
    return take_answer(*remote, std::move(record), entry_key, p);  // a damaged one: compiled here
  } else if (answer.timed_out) {
    cache::warn_once("waited " + std::to_string(config.compile_lock_timeout_s) + " s (KJIT_COMPILE_LOCK_TIMEOUT) for " +
                     remote->name() + " to get a kernel another node compiles; compiling it here");
  }
  return std::nullopt;
}

void Cache::Impl::offer_to_tiers(const util::Sha256& entry_key, const store::Entry& entry) noexcept
{
  if (entry.kind != store::EntryKind::binary) {
    return;  // a compile error is this machine's to keep: another node's toolkit may compile it
  }
  try {
    std::string record;  // encoded once, for the first tier that keeps puts
    for (const auto& tier : tiers) {
      if (tier->keeps_puts()) {
        if (record.empty()) {
          // Self-contained (headers inline): another machine's store has none of this one's blobs.
          record = store::encode_record(entry, entry_key, store::HeaderStorage::inline_content);
        }
        tier->put(entry_key, record);
      }
    }
  } catch (const std::exception& e) {
    cache::warn_once(std::string("cannot offer a compiled kernel to the tiers below the store: ") + e.what());
  }
}

} // namespace kjit
