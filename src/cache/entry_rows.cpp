#include "cache/entry_rows.hpp"

#include "cache/cache_impl.hpp"
#include "cache/entry_leads.hpp"
#include "store/blobs.hpp"

#include <ftw.h>
#include <mutex>
#include <set>
#include <sys/stat.h>
#include <tuple>

namespace kjit::cache {

namespace {

std::size_t g_tree_bytes = 0;  // nftw has no user pointer; guarded by g_tree_mutex
std::set<std::pair<dev_t, ino_t>> g_tree_linked;  // files with several links, counted once (as du does)
nlink_t g_tree_max_links = 0;
std::mutex g_tree_mutex;

} // namespace

std::string hex_of(std::string_view raw)
{
  return util::to_hex(reinterpret_cast<const std::uint8_t*>(raw.data()), raw.size());
}

std::vector<Row> decoded_rows(const store::Store* store, const EntryFilter& filter,
                              store::Sections sections, std::vector<Row>* unreadable)
{
  std::vector<Row> rows;
  if (store == nullptr) {
    return rows;
  }
  store->for_each(store::Table::entries, [&](std::string_view key, std::string_view bytes) {
    std::string why;
    auto entry = store::decode_record(bytes, util::digest_of_bytes(key), sections, why);
    if (entry && entry_matches(filter, *entry)) {
      rows.push_back({std::string(key), bytes.size(), std::move(*entry)});
    } else if (!entry && unreadable != nullptr) {
      unreadable->push_back({std::string(key), bytes.size(), {}});
    }
  });
  return rows;
}

void remove_rows(Cache::Impl& impl, const std::vector<const Row*>& rows)
{
  std::vector<std::string> keys;
  std::vector<std::string> names;
  std::vector<std::string> uses;
  std::set<std::string_view> unnamed;  // records this build can't read: their names rows are found by key
  for (const Row* row : rows) {
    keys.push_back(row->raw_key);
    names.push_back(store::names_key(row->entry.program_name, row->raw_key));
    uses.push_back(used_row(row->raw_key));
    if (row->entry.program_name.empty()) {
      unnamed.insert(row->raw_key);
    }
  }
  if (!unnamed.empty()) {
    impl.store->for_each(store::Table::names, [&](std::string_view name_key, std::string_view) {
      if (name_key.size() >= 32 && unnamed.count(name_key.substr(name_key.size() - 32)) != 0) {
        names.emplace_back(name_key);
      }
    });
  }
  const std::set<std::string> manifests = manifest_keys(*impl.store, keys);
  impl.store->erase(store::Table::entries, keys);  // with the header blobs only they used
  impl.store->erase(store::Table::names, names);
  impl.store->erase(store::Table::meta, uses);
  erase_leads(*impl.store, keys, manifests);  // their direct rows and manifests
  impl.direct_index.clear();
  std::vector<util::Sha256> digests;  // only these leave the memory tier: the others stay warm
  for (const std::string& key : keys) {
    digests.push_back(util::digest_of_bytes(key));
  }
  impl.memory.erase(digests);
  impl.mirror_removed(keys);
}

std::size_t allocated_bytes(const std::string& root, nlink_t max_links)
{
  std::lock_guard lock(g_tree_mutex);
  g_tree_bytes = 0;
  g_tree_linked.clear();
  g_tree_max_links = max_links;
  std::ignore = ::nftw(
    root.c_str(),
    [](const char*, const struct stat* st, int, FTW*) {
      // The mirror's headers are hard links to one shared file each.
      if (S_ISDIR(st->st_mode) ||
          (st->st_nlink <= g_tree_max_links &&
           (st->st_nlink <= 1 || g_tree_linked.insert({st->st_dev, st->st_ino}).second))) {
        g_tree_bytes += static_cast<std::size_t>(st->st_blocks) * 512;
      }
      return 0;
    },
    32, FTW_PHYS);
  g_tree_linked.clear();
  return g_tree_bytes;
}

std::size_t mirror_bytes(const std::string& cache_dir, const std::string& hex)
{
  // A header linked from this folder and programs/headers/ only goes with it (swept once unused).
  return allocated_bytes(cache_dir + "/programs/" + hex, 2);
}

} // namespace kjit::cache
