// The size limit: last use recorded in batches (never a write per hit), LRU eviction on writes.
#include "cache/cache_impl.hpp"

#include "cache/usage_log.hpp"
#include "config/log.hpp"
#include "store/meta_keys.hpp"

#include <ctime>
#include <optional>
#include <sstream>
#include <unistd.h>

namespace kjit {

namespace {

// A use is written again only when the recorded one is older than this: hits stay reads.
constexpr std::int64_t k_use_granularity_s = 3600;
// The store's count row is taken for this long after its full count; then a full count again
// (what the additions guess, what went without them, what other writers lost, made right).
constexpr std::int64_t k_recount_s = 24 * 3600;

// The count row's value for `bytes` counted now.
std::string count_text(std::size_t bytes)
{
  return std::to_string(bytes) + " " + std::to_string(static_cast<std::int64_t>(::time(nullptr)));
}

// The bytes of the store's count row when its full count was less than k_recount_s ago.
std::optional<std::size_t> recent_count(const store::Store& store)
{
  const auto value = store.get(store::Table::meta, store::k_size_count);
  std::istringstream words(value.value_or(std::string()));
  std::size_t bytes = 0;
  std::int64_t counted_at = 0;
  const std::int64_t now = static_cast<std::int64_t>(::time(nullptr));
  if (!(words >> bytes >> counted_at) || counted_at > now + 60 || now - counted_at >= k_recount_s) {
    return std::nullopt;
  }
  return bytes;
}

} // namespace

namespace cache {

std::string used_row(std::string_view raw_key)
{
  return "used " + std::string(raw_key);
}

std::int64_t recorded_use(const store::Store& store, std::string_view raw_key)
{
  const auto value = store.get(store::Table::meta, used_row(raw_key));
  return value ? std::atoll(value->c_str()) : 0;
}

std::size_t blob_growth_bound(std::size_t bytes)
{
  // LMDB's pages are the system's. The encoding (compressed, checksummed) of content that does not
  // compress is a little longer than the content.
  static const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  return (bytes + bytes / 64 + 512 + page - 1) / page * page + 2 * page;
}

} // namespace cache

void Cache::Impl::note_use(const util::Sha256& entry_key)
{
  if (store) {
    std::lock_guard lock(size.uses_mutex);
    size.used.insert(entry_key);
  }
}

void Cache::Impl::flush_uses() noexcept
{
  if (!store || !store->writable() || creator != ::getpid()) {
    return;  // (a fork()ed child: a thread of the parent may have held size.uses_mutex at fork())
  }
  std::unordered_set<util::Sha256, util::DigestHash> noted;
  {
    std::lock_guard lock(size.uses_mutex);
    noted.swap(size.used);  // hits on other threads wait for a swap, not for a copy
  }
  memory.take_used(noted);  // the memory hits (MemoryTier::find_hit, count_hit)
  const std::set<util::Sha256> taken(noted.begin(), noted.end());  // the rows go in key order
  std::vector<store::Store::Row> rows = take_toolchain_rows();  // none persisted them: with these
  if (taken.empty() && rows.empty()) {
    return;
  }
  try {
    const std::int64_t now = static_cast<std::int64_t>(::time(nullptr));
    for (const util::Sha256& key : taken) {
      // (a key served from memory may have no entry: a store that could not take it)
      if (now - cache::recorded_use(*store, bytes_of(key)) >= k_use_granularity_s &&
          store->visit(store::Table::entries, bytes_of(key), [](std::string_view) {})) {
        rows.push_back({store::Table::meta, cache::used_row(bytes_of(key)), std::to_string(now)});
      }
    }
    store->put(rows);
  } catch (const std::exception& e) {
    log::line(std::string("warning: cannot record when cached kernels were used: ") + e.what());
  }
}

void Cache::Impl::count_now()
{
  // A full count walks the mirror and reads every record and blob: for a store of 50 vendored-
  // CCCL entries, 180 000 files and 25 MB, 0.1–0.2 s beside NVRTC, growing with the store (the
  // default limit holds 2 000 of them) in every process's first miss. The store's count row
  // holds it, kept up to date by each write's commit.
  const auto counted = recent_count(*store);
  std::size_t remaining = counted.value_or(0);
  if (!counted) {
    evict_to(SIZE_MAX, remaining);  // counts (once the commits are in), removes nothing
  }
  size.estimate = remaining + size.queued_mirror_bytes;  // the mirror's queued writes: their guess
  size.counted = true;
  size.blob_table_bytes = store->table_bytes(store::Table::blobs);
  size.unseen_blob_bound = 0;
  if (!counted) {
    // Stored with the write that follows (one commit, one fdatasync: a fresh node's first remote
    // hit syncs its store once), else by after_write().
    size.count_row = count_text(size.estimate);
  }
}

void Cache::Impl::keep_count(std::size_t bytes) noexcept
{
  try {
    // (A write whose commit lands between the count and this row is counted by neither: the next
    // full count sees it. One queued by this process is in `bytes`, its guess.)
    store->put({{store::Table::meta, std::string(store::k_size_count), count_text(bytes)}});
  } catch (const std::exception&) {
    // the next process counts again
  }
}

namespace {

// Whether writes to `store` are counted against KJIT_MAX_SIZE (`max_size`, 0: no limit).
bool size_limited(std::size_t max_size, const std::shared_ptr<store::Store>& store)
{
  return max_size != 0 && store && store->writable();
}

void warn_size_unkept(const std::exception& e)
{
  log::line(std::string("warning: cannot keep the cache within KJIT_MAX_SIZE: ") + e.what());
}

} // namespace

void Cache::Impl::add_to_count(std::vector<store::Store::Row>& rows, std::size_t bytes)
{
  // Every write adds to a count the store holds, a process without a limit's too (a review: its
  // writes went uncounted, and a limited process took the count for a day, the store past it).
  if (store && store->writable()) {
    {
      std::lock_guard lock(size.mutex);
      if (size.count_row) {  // a full count this process made: first (the write's bytes added to it)
        rows.push_back({store::Table::meta, std::string(store::k_size_count), std::move(*size.count_row)});
        size.count_row.reset();
      }
    }
    store::Store::Row row{store::Table::meta, std::string(store::k_size_count), std::to_string(bytes)};
    row.added = true;
    rows.push_back(std::move(row));
  }
}

void Cache::Impl::count_before_write() noexcept
{
  if (!size_limited(config.max_size, store)) {
    return;
  }
  try {
    std::lock_guard lock(size.mutex);
    if (!size.counted) {
      count_now();
      size.queued_mirror_bytes = 0;  // counted: after_write() adds only what is queued from now on
    }
  } catch (const std::exception& e) {
    warn_size_unkept(e);
  }
}

void Cache::Impl::after_write(const util::Sha256& /*key*/, std::size_t record_bytes, std::size_t blob_bound) noexcept
{
  flush_uses();
  if (!size_limited(config.max_size, store)) {
    return;
  }
  try {
    std::lock_guard lock(size.mutex);
    // The mirror folder is written later, on the mirror's thread: a count adds mirror_entry()'s
    // guess for the queued writes (a folder being written may be counted twice: more, never
    // less); an eviction's full count waits for them.
    // Header blobs are rows of their own (stored once, shared): a write adds the growth of their
    // table's pages (one mdb_stat), which shows only once its commit has landed on the store's
    // writer thread. Waiting for that would make every miss wait for its commit; read before it,
    // the growth was counted one write late, and a write that took the store over the limit
    // evicted nothing. So the writes not seen yet count as the most they can add: while that
    // keeps the count within the limit, none of them can pass it and nothing waits; else their
    // commits are waited for (as an eviction waits anyway) and what they really added is counted.
    if (!size.counted) {
      count_now();  // (after this write's commit: it is in the count)
    } else {
      size.estimate += record_bytes + size.queued_mirror_bytes;
      size.unseen_blob_bound += blob_bound;
      if (size.estimate + size.unseen_blob_bound > config.max_size) {
        store->settle();  // the queued commits in: what they added is on the store
        const std::size_t blob_bytes = store->table_bytes(store::Table::blobs);
        size.estimate += blob_bytes > size.blob_table_bytes ? blob_bytes - size.blob_table_bytes : 0;
        size.blob_table_bytes = blob_bytes;
        size.unseen_blob_bound = 0;
      }
    }
    size.queued_mirror_bytes = 0;
    if (size.count_row) {  // a count no write took (an import counts after its own)
      keep_count(size.estimate);
      size.count_row.reset();
    }
    if (size.estimate > config.max_size) {
      std::size_t remaining = 0;
      const std::size_t removed = evict_to(config.max_size / 10 * 9, remaining);
      size.estimate = remaining;
      keep_count(remaining);
      size.blob_table_bytes = store->table_bytes(store::Table::blobs);
      size.unseen_blob_bound = 0;
      if (config.verbose) {
        log::line("evicted " + std::to_string(removed) + " least recently used entries (KJIT_MAX_SIZE)");
      }
    }
  } catch (const std::exception& e) {
    warn_size_unkept(e);
  }
}

} // namespace kjit
