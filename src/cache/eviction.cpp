// Eviction for the size limit (KJIT_MAX_SIZE, after_write() in size_limit.cpp) and
// `kjit prune --max-size`: least recently used entries first, counted as each frees.
#include "cache/cache_impl.hpp"
#include "cache/entry_leads.hpp"
#include "cache/entry_rows.hpp"
#include "store/blobs.hpp"
#include "store/record.hpp"

#include <algorithm>
#include <iterator>
#include <map>

namespace kjit {

std::size_t Cache::Impl::evict_to(std::size_t bytes, std::size_t& remaining)
{
  if (bytes == SIZE_MAX) {
    // A count only (a process's first write): the records' sizes as stored, with no decoding, no
    // last uses and no folder per entry; in a store of 100 000 entries those took seconds. The
    // mirror as it is now, not waited for: that put the mirror's writing of this process's first
    // entry on the caller's path (after_write() adds the queued writes' guess).
    remaining = cache::allocated_bytes(config.cache_dir + "/programs") + cache::lead_bytes(*store, false).total;
    store->for_each(store::Table::entries, [&](std::string_view, std::string_view value) { remaining += value.size(); });
    store->for_each(store::Table::blobs, [&](std::string_view, std::string_view value) { remaining += value.size(); });
    return 0;
  }
  // Records this build can't read (another format, what an older kjit left; damaged ones) are
  // ranked too: left out, their mirror folders and rows counted against the limit while only
  // new entries could go, each write evicted every new entry.
  std::vector<cache::Row> unreadable;
  std::vector<cache::Row> rows = cache::decoded_rows(store.get(), {}, store::Sections::artifacts, &unreadable);
  const std::size_t readable = rows.size();
  std::move(unreadable.begin(), unreadable.end(), std::back_inserter(rows));
  struct Ranked {
    const cache::Row* row;
    std::int64_t last_use;
    std::size_t bytes;
  };
  std::vector<Ranked> ranked;
  // Counted as usage() counts: the records and the whole mirror (shared headers, index.txt), once
  // the queued mirror writes are done; an entry's removal frees its record and its own folder.
  if (mirror_writer) {
    mirror_writer->flush();
  }
  // The rows that lead to an entry (direct rows, manifests) go with it (entry_leads.hpp).
  const cache::LeadBytes leads = cache::lead_bytes(*store, true);
  std::size_t total = cache::allocated_bytes(config.cache_dir + "/programs") + leads.total;
  // Header blobs (stored once, shared): counted in the total; an entry's removal frees those whose
  // last reference it holds (Store::erase releases them), so each is charged as its users go.
  std::map<std::string, std::size_t, std::less<>> blob_size;          // blob key → stored bytes
  std::map<std::string, std::vector<std::string>, std::less<>> entry_blobs;  // entry key → its blob keys
  std::map<std::string, std::size_t, std::less<>> blob_users;         // blob key → entries using it
  store->for_each(store::Table::blobs, [&](std::string_view key, std::string_view value) {
    blob_size.emplace(std::string(key), value.size());
    total += value.size();
  });
  store->for_each(store::Table::entries, [&](std::string_view key, std::string_view record) {
    std::string why;
    // (a record that can't be read uses none)
    const auto hashes = store::header_blobs(record, why).value_or(std::vector<util::Sha256>{});
    std::vector<std::string>& blobs = entry_blobs[std::string(key)];
    for (const util::Sha256& hash : hashes) {
      blobs.push_back(store::blob_key(hash));
      ++blob_users[blobs.back()];
    }
  });
  for (const cache::Row& row : rows) {
    const std::string hex = cache::hex_of(row.raw_key);
    const auto lead = leads.per_entry.find(row.raw_key);
    const std::size_t size = row.bytes + (lead == leads.per_entry.end() ? 0 : lead->second) +
                             cache::mirror_bytes(config.cache_dir, hex);
    // An unreadable record's creation is unknown: its last recorded use (a kjit of another
    // format sharing the folder records them too), else none.
    const bool unreadable = static_cast<std::size_t>(&row - rows.data()) >= readable;
    const std::int64_t used = cache::recorded_use(*store, row.raw_key);
    ranked.push_back({&row, unreadable ? used : std::max(row.entry.created_unix, used), size});
    total += row.bytes;
  }
  // What no removal frees: the mirror's shared files and folders (index.txt, headers/, programs/
  // itself) and rows that lead to no entry. The limit bounds what the entries take: counted, these
  // would make a limit that the entries' own bytes fit in remove every entry (a mirror's shared
  // files alone can be larger than a small limit).
  std::size_t own = 0;
  for (const Ranked& r : ranked) {
    own += r.bytes;
  }
  for (const auto& [blob, size] : blob_size) {
    own += blob_users.count(blob) != 0 ? size : 0;
  }
  std::size_t counted = std::min(total, own);  // what the limit bounds, as entries go
  // Least recently used first (last use recorded by hits, else creation); ties by key.
  std::sort(ranked.begin(), ranked.end(), [](const Ranked& a, const Ranked& b) {
    return a.last_use != b.last_use ? a.last_use < b.last_use : a.row->raw_key < b.row->raw_key;
  });
  std::vector<const cache::Row*> removed;
  for (const Ranked& r : ranked) {
    if (counted <= bytes) {
      break;
    }
    counted -= std::min(counted, r.bytes);
    if (const auto blobs = entry_blobs.find(r.row->raw_key); blobs != entry_blobs.end()) {
      for (const std::string& blob : blobs->second) {
        const auto size = blob_size.find(blob);
        if (--blob_users[blob] == 0 && size != blob_size.end()) {
          counted -= std::min(counted, size->second);
        }
      }
    }
    removed.push_back(r.row);
  }
  if (!removed.empty()) {
    cache::remove_rows(*this, removed);
  }
  remaining = counted;
  return removed.size();
}

} // namespace kjit
