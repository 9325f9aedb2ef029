// Manifests in use: a warm lookup stats the headers a manifest lists instead of resolving again.
#include "cache/cache_impl.hpp"

#include <cstring>

namespace kjit {

void Cache::Impl::save_manifest(const util::Sha256& direct_key, const deps::Manifest& manifest, bool now)
{
  {
    std::lock_guard lock(manifest_mutex);
    manifests[direct_key] = manifest;
    if (now) {
      unsaved_manifests.erase(direct_key);
    } else {
      unsaved_manifests.insert(direct_key);
    }
  }
  if (now && store && store->writable()) {
    store->put(store::Table::manifests, bytes_of(direct_key), deps::encode_manifest(manifest));
  }
}

std::optional<store::Store::Row> Cache::Impl::take_unsaved_manifest(const PreparedProgram& prepared)
{
  util::Sha256 direct;
  std::memcpy(direct.data(), prepared.m_direct, direct.size());
  std::lock_guard lock(manifest_mutex);
  if (unsaved_manifests.erase(direct) == 0) {
    return std::nullopt;
  }
  return store::Store::Row{store::Table::manifests, std::string(bytes_of(direct)),
                           deps::encode_manifest(manifests.at(direct))};
}

deps::Resolution Cache::Impl::includes_for(const util::Sha256& direct_key, const Program& program, const Arch& arch)
{
  std::optional<deps::Manifest> manifest;
  {
    std::lock_guard lock(manifest_mutex);
    if (const auto it = manifests.find(direct_key); it != manifests.end()) {
      manifest = it->second;
    }
  }
  const bool from_store = !manifest && store;
  if (from_store) {
    if (const auto bytes = store->get(store::Table::manifests, bytes_of(direct_key))) {
      manifest = deps::decode_manifest(*bytes);
    }
  }
  if (manifest) {
    for (std::size_t i = 0; i < manifest->size(); ++i) {
      deps::ValidationCounters counters;
      const deps::Validation validation = deps::validate((*manifest)[i], counters);
      {
        std::lock_guard lock(stats_mutex);
        stats.header_stats += counters.stats;
        stats.header_rehashes += counters.rehashes;
      }
      if (validation == deps::Validation::changed) {
        continue;
      }
      deps::Resolution found = (*manifest)[i];
      if (validation == deps::Validation::same_content || i != 0) {
        // Newest matching entry first, with the stamps seen now: the next check is stats only.
        manifest->erase(manifest->begin() + static_cast<std::ptrdiff_t>(i));
        manifest->insert(manifest->begin(), found);
        save_manifest(direct_key, *manifest, true);
      } else if (from_store) {
        std::lock_guard lock(manifest_mutex);
        manifests[direct_key] = *manifest;
      }
      return found;
    }
  }
  deps::Resolution resolved = deps::resolve_includes(program, arch, key_context().toolkit_include_dirs);
  deps::Resolution recorded = resolved;
  for (auto& header : recorded.headers) {
    header.content.clear();
  }
  deps::Manifest updated = manifest ? std::move(*manifest) : deps::Manifest{};
  updated.insert(updated.begin(), std::move(recorded));
  if (updated.size() > deps::k_manifest_entries) {
    updated.resize(deps::k_manifest_entries);
  }
  // Stored with the entry's commit (or after a disk hit): no extra write transaction on a miss.
  save_manifest(direct_key, updated, false);
  return resolved;
}

} // namespace kjit
