// The tiers below the store (bundles): opened from the config, asked in order, hits verified and promoted.
#include "cache/cache_impl.hpp"

#include "bundle/bundle_tier.hpp"
#include "config/log.hpp"
#include "store/record.hpp"

namespace kjit {

void Cache::Impl::open_tiers()
{
  for (const std::string& path : config.bundles) {
    tiers.push_back(bundle::open_tier(path));
  }
  if (!store || !store->writable()) {
    return;
  }
  // The bundles' toolchain identities let an empty store find the key's toolchain part without
  // loading NVRTC (a fact about those library files, so adding a missing one is always safe).
  std::vector<store::Store::Row> rows;
  for (const auto& tier : tiers) {
    for (bundle::MetaRow& row : bundle::tier_meta(*tier)) {
      if (row.key.rfind("toolchain ", 0) == 0 && !store->get(store::Table::meta, row.key)) {
        rows.push_back({store::Table::meta, std::move(row.key), std::move(row.value)});
      }
    }
  }
  store->put(rows);
}

std::optional<store::Entry> Cache::Impl::load_from_tiers(const util::Sha256& key, const PreparedProgram& p)
{
  for (const auto& tier : tiers) {
    cache::TierAnswer answer = tier->get(key);
    if (answer.kind == cache::TierAnswer::Kind::none) {
      continue;
    }
    std::string why = answer.why;
    std::optional<store::Entry> entry;
    if (answer.kind == cache::TierAnswer::Kind::record) {
      entry = store::decode_record(answer.bytes, key, store::Sections::all, why);
    }
    if (!entry) {
      count(&CacheStats::tier_errors);
      // An unreadable tier is logged once; a damaged record once per key.
      const std::string what = tier->name() + (answer.kind == cache::TierAnswer::Kind::failure ? why : p.key());
      std::lock_guard lock(flight_mutex);
      if (tier_reported.insert(what).second) {
        log::line("warning: " + tier->name() + ": " + why + " (" + p.program().name + ", " + p.arch().str() +
                  "); treated as a miss");
      }
      continue;
    }
    count(&CacheStats::bundle_hits, &CacheStats::compile_ms_saved, entry->binary.timings.total_ms);
    if (entry->kind == store::EntryKind::failure) {
      count(&CacheStats::failed_hits);
    }
    try {
      persist(key, p, *entry);  // promoted: the next process finds it in its own store
    } catch (const Error& e) {
      log::line(std::string("warning: cannot copy a bundle hit into the store: ") + e.what());
    }
    return entry;
  }
  return std::nullopt;
}

} // namespace kjit
