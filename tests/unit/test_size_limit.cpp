// The size limit: last use recorded in batches, least recently used entries evicted on writes
// (KJIT_MAX_SIZE) and by Cache::prune_to_size (kjit prune --max-size).
#include <boost/test/unit_test.hpp>

#include "fixture.hpp"

#include "cache/cache_impl.hpp"
#include "store/meta_keys.hpp"
#include "store/store.hpp"
#include "util/hash.hpp"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <optional>
#include <cstdlib>
#include <sys/stat.h>
#include <thread>

using namespace kjit::test;

namespace {

const kjit::Arch k_arch = kjit::Arch::parse("sm_90");

// The raw 32-byte key of `program` once it is stored (the hex key decoded).
std::string raw_key(kjit::Cache& cache, const kjit::Program& program)
{
  return kjit::test::raw_key(cache.prepare(program, k_arch));
}

bool stored(const kjit::Config& config, const kjit::Program& program)
{
  kjit::Cache cache(config);
  cache.get(program, k_arch);
  return cache.stats().compiles == 0;
}

// What entries take (records + mirror) beside what no eviction removes: the mirror's own folder,
// its shared headers/ folder and index.txt.
std::size_t mirror_folder_bytes(const kjit::Config& config)
{
  std::size_t bytes = 0;
  for (const char* name : {"", "/headers", "/index.txt"}) {
    struct stat st {};
    if (::stat((config.cache_dir + "/programs" + name).c_str(), &st) == 0) {
      bytes += static_cast<std::size_t>(st.st_blocks) * 512;
    }
  }
  return bytes;
}

std::size_t total_bytes(const kjit::Config& config)
{
  const kjit::DiskUsage usage = kjit::Cache(config).usage();
  return usage.record_bytes + usage.mirror_bytes;
}

// Entry creation and use times are whole seconds: let one pass.
void next_second()
{
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
}

// The store's count for KJIT_MAX_SIZE (store::k_size_count): its bytes and the time of its count.
std::optional<std::pair<std::size_t, std::int64_t>> count_row(const kjit::Config& config)
{
  const auto store = kjit::store::Store::open(config.cache_dir + "/store", config.store_map_size);
  const auto value = store->get(kjit::store::Table::meta, kjit::store::k_size_count);
  std::size_t bytes = 0;
  std::int64_t at = 0;
  if (!value || std::sscanf(value->c_str(), "%zu %lld", &bytes, reinterpret_cast<long long*>(&at)) != 2) {
    return std::nullopt;
  }
  return std::make_pair(bytes, at);
}

void set_count_row(const kjit::Config& config, const std::string& value)
{
  const auto store = kjit::store::Store::open(config.cache_dir + "/store", config.store_map_size);
  store->put({{kjit::store::Table::meta, std::string(kjit::store::k_size_count), value}});
}

// A file of `bytes` in the mirror's folder, which a full count counts and no write adds.
void junk_in_the_mirror(const kjit::Config& config, std::size_t bytes)
{
  put(config.cache_dir + "/programs/junk.bin", std::string(bytes, 'j'));
}

} // namespace

BOOST_FIXTURE_TEST_SUITE(size_limit, CacheFixture)

BOOST_AUTO_TEST_CASE(hits_are_recorded_when_the_cache_goes_away_not_one_write_each)
{
  const kjit::Program program = small_program("used");
  std::string raw;
  {
    kjit::Cache cache(config);
    cache.get(program, k_arch);
    raw = raw_key(cache, program);
  }
  {
    kjit::Cache cache(config);
    const auto store = kjit::store::Store::open(config.cache_dir + "/store", config.store_map_size);
    cache.get(program, k_arch);  // a disk hit
    cache.get(program, k_arch);  // a disk hit, now kept in the memory tier
    cache.get(program, k_arch);  // a memory hit
    BOOST_TEST(cache.stats().disk_hits == 2u);
    BOOST_TEST(cache.stats().memory_hits == 1u);
    BOOST_TEST(!store->get(kjit::store::Table::meta, kjit::cache::used_row(raw)).has_value());  // hits wrote nothing
  }
  const auto store = kjit::store::Store::open(config.cache_dir + "/store", config.store_map_size);
  const std::int64_t used = kjit::cache::recorded_use(*store, raw);
  BOOST_TEST(used > 0);
  // Within the hour a later process's hit writes nothing: the value stays.
  next_second();
  { kjit::Cache(config).get(program, k_arch); }
  BOOST_TEST(kjit::cache::recorded_use(*store, raw) == used);
}

// A prepared program's memory hits are counted by the memory tier under its own lock (one lock per
// hit): stats(), the compile time saved, remembered errors, the usage log and the last-use rows
// see them all, and Cache::clear() zeroes them.
BOOST_AUTO_TEST_CASE(a_prepared_programs_memory_hits_are_counted_and_recorded)
{
  const kjit::Program program = small_program("prepared_hits");
  const kjit::Program bad{"bad_prepared.cu", "__global__ void k(int* p) { *p = undefined_name; }\n", {}, {}, {}};
  std::string raw;
  {
    kjit::Cache cache(config);
    const kjit::PreparedProgram prepared = cache.prepare(program, k_arch);
    const auto compiled = cache.get(prepared);  // a compile, kept in the memory tier at once
    raw = raw_key(prepared);
    const kjit::PreparedProgram failing = cache.prepare(bad, k_arch);
    BOOST_CHECK_THROW(cache.get(failing), kjit::CompileError);
    for (int i = 0; i < 5; ++i) {
      BOOST_TEST(cache.get(prepared) == compiled);
    }
    BOOST_CHECK_THROW(cache.get(failing), kjit::CompileError);
    const kjit::CacheStats stats = cache.stats();
    BOOST_TEST(stats.memory_hits == 6u);
    BOOST_TEST(stats.failed_hits == 1u);
    BOOST_TEST(stats.compile_ms_saved >= 5 * compiled->timings.total_ms * 0.999);
    BOOST_TEST(stats.compile_ms_saved > 0);
  }
  const auto store = kjit::store::Store::open(config.cache_dir + "/store", config.store_map_size);
  BOOST_TEST(kjit::cache::recorded_use(*store, raw) > 0);  // noted by the memory hits alone
  kjit::Cache cache(config);
  BOOST_TEST(cache.usage().memory_hits == 6u);
  const kjit::PreparedProgram prepared = cache.prepare(program, k_arch);
  cache.get(prepared);
  cache.get(prepared);
  cache.get(prepared);  // disk, disk (admitted), memory
  BOOST_TEST(cache.stats().memory_hits == 1u);
  cache.clear();
  BOOST_TEST(cache.stats().memory_hits == 0u);
}

// An entry's last use goes with it: a record quarantined on a hit and Cache::clear leave no
// `used <key>` row behind.
BOOST_AUTO_TEST_CASE(quarantine_and_clear_remove_the_last_use)
{
  const kjit::Program program = small_program("used_then_damaged");
  std::string raw;
  {
    kjit::Cache cache(config);
    cache.get(program, k_arch);
    raw = raw_key(cache, program);
  }
  { kjit::Cache(config).get(program, k_arch); }  // a disk hit: its use recorded
  {
    const auto store = kjit::store::Store::open(config.cache_dir + "/store", config.store_map_size);
    BOOST_TEST(kjit::cache::recorded_use(*store, raw) > 0);
    std::string record = *store->get(kjit::store::Table::entries, raw);
    record[record.size() / 2] = static_cast<char>(record[record.size() / 2] ^ 0x10);
    store->put(kjit::store::Table::entries, raw, record);
  }
  {
    kjit::Cache cache(config);
    cache.get(program, k_arch);  // damaged: quarantined, compiled again
    BOOST_TEST(cache.stats().quarantined == 1u);
  }
  {
    const auto store = kjit::store::Store::open(config.cache_dir + "/store", config.store_map_size);
    BOOST_TEST(store->get(kjit::store::Table::entries, raw).has_value());  // compiled again
    BOOST_TEST(kjit::cache::recorded_use(*store, raw) == 0);                 // the old use went with the record
  }
  { kjit::Cache(config).get(program, k_arch); }  // a hit: used again
  {
    const auto store = kjit::store::Store::open(config.cache_dir + "/store", config.store_map_size);
    BOOST_TEST(kjit::cache::recorded_use(*store, raw) > 0);
  }
  kjit::Cache(config).clear();
  const auto store = kjit::store::Store::open(config.cache_dir + "/store", config.store_map_size);
  BOOST_TEST(kjit::cache::recorded_use(*store, raw) == 0);
}

BOOST_AUTO_TEST_CASE(prune_to_size_removes_the_least_recently_used_not_the_oldest)
{
  const kjit::Program older = small_program("older_but_used");
  const kjit::Program newer = small_program("newer_unused");
  BOOST_TEST(!stored(config, older));
  next_second();
  BOOST_TEST(!stored(config, newer));
  next_second();
  BOOST_TEST(stored(config, older));  // used now: the most recent
  BOOST_TEST_REQUIRE(kjit::Cache(config).disk_entries() == 2u);
  const std::size_t total = total_bytes(config);
  const std::size_t entry = (total - mirror_folder_bytes(config)) / 2;
  BOOST_TEST(kjit::Cache(config).prune_to_size(total - entry + 512) == 1u);  // room for one
  BOOST_TEST(stored(config, older));   // kept: used last
  BOOST_TEST(!stored(config, newer));  // removed: created later but never used
}

BOOST_AUTO_TEST_CASE(max_size_evicts_the_least_recently_used_when_entries_are_written)
{
  for (const char* tag : {"lru_a", "lru_b", "lru_c"}) {
    BOOST_TEST(!stored(config, small_program(tag)));
    next_second();  // created in this order
  }
  BOOST_TEST(stored(config, small_program("lru_a")));  // a is used: b is now the least recent
  BOOST_TEST_REQUIRE(kjit::Cache(config).disk_entries() == 3u);
  const std::size_t total = total_bytes(config);
  const std::size_t entry = (total - mirror_folder_bytes(config)) / 3;
  // Room for three and a half entries: the fourth write evicts down to 90% of it, which one
  // eviction (the least recently used entry) reaches.
  kjit::Config limited = config;
  limited.max_size = total + entry / 2;
  {
    kjit::Cache cache(limited);
    cache.get(small_program("lru_d"), k_arch);
    BOOST_TEST(cache.stats().compiles == 1u);
  }
  BOOST_TEST(total_bytes(config) <= limited.max_size / 10 * 9);
  BOOST_TEST(kjit::Cache(config).disk_entries() == 3u);
  BOOST_TEST(stored(config, small_program("lru_d")));  // just written
  BOOST_TEST(stored(config, small_program("lru_a")));  // used
  BOOST_TEST(!stored(config, small_program("lru_b")));  // least recently used: gone first
}

BOOST_AUTO_TEST_CASE(the_limit_is_five_gib_unless_set)
{
  const char* saved = std::getenv("KJIT_MAX_SIZE");
  const std::string kept = saved != nullptr ? saved : "";
  ::unsetenv("KJIT_MAX_SIZE");
  BOOST_TEST(kjit::current_config().max_size == std::size_t(5) << 30);
  ::setenv("KJIT_MAX_SIZE", "300MiB", 1);
  BOOST_TEST(kjit::current_config().max_size == std::size_t(300) << 20);
  kjit::option::max_size(12345);
  BOOST_TEST(kjit::current_config().max_size == 12345u);
  kjit::option::reset();
  ::setenv("KJIT_MAX_SIZE", "lots", 1);
  kjit::option::strict_environment(true);
  BOOST_CHECK_THROW(kjit::current_config(), kjit::ConfigError);
  kjit::option::reset();
  if (saved != nullptr) {
    ::setenv("KJIT_MAX_SIZE", kept.c_str(), 1);
  } else {
    ::unsetenv("KJIT_MAX_SIZE");
  }
}

// Headers are stored once, in the blob table, shared by the entries that use them: KJIT_MAX_SIZE
// counts them too. Many programs each with its own large header keep the cache near the limit.
// Failed before: the blobs were not counted, so 12 entries of a 40 KB-record limit kept ≈ 12
// headers of 64 KB each.
BOOST_AUTO_TEST_CASE(header_blobs_are_counted_against_the_limit)
{
  config.mirror = false;
  config.max_size = 160 * 1024;
  std::uint64_t seed = 88172645463325252ULL;
  for (int i = 0; i < 12; ++i) {
    std::string header = "#define V" + std::to_string(i) + " " + std::to_string(i) + "\n// ";
    for (int c = 0; c < 128 * 1024; ++c) {  // hardly compressible: 64 KB or more stored
      seed ^= seed << 13;
      seed ^= seed >> 7;
      seed ^= seed << 17;
      header += static_cast<char>('a' + seed % 26);
      header += c % 100 == 99 ? "\n// " : "";
    }
    const std::string dir = tmp.path() + "/p" + std::to_string(i);
    put(dir + "/big.h", header + "\n");
    put(dir + "/k.cu", "#include \"big.h\"\nextern \"C\" __global__ void k(int* o) { *o = V" + std::to_string(i) +
                           "; }\n");
    settle();
    kjit::Cache cache(config);
    kjit::Program program = kjit::program_from_file(dir + "/k.cu");
    cache.get(program, k_arch);
  }
  const auto store = kjit::store::Store::open(config.cache_dir + "/store", config.store_map_size);
  std::size_t blobs = 0;
  std::size_t records = 0;
  store->for_each(kjit::store::Table::blobs, [&](std::string_view, std::string_view value) { blobs += value.size(); });
  store->for_each(kjit::store::Table::entries, [&](std::string_view, std::string_view value) { records += value.size(); });
  BOOST_TEST(records + blobs <= config.max_size, records << " bytes of records, " << blobs << " of header blobs");
  BOOST_TEST(records + blobs >= config.max_size / 4);  // the latest entries are still there
}

// A process's first write took a full count of the store and its mirror, beside its compile: a
// vendored CCCL's store of 50 entries walked 180 000 files (0.2–0.6 s), in every process, growing
// with the store (the default limit holds about 2 000 such entries). The count is a row of the
// store now, made by a full count and kept by each write's commit; a later process takes it.
// Failed before: no row (each process counted again).
BOOST_AUTO_TEST_CASE(a_processs_first_write_takes_the_stores_count_and_adds_its_own)
{
  config.max_size = std::size_t(1) << 30;
  { kjit::Cache(config).get(small_program("count_a"), k_arch); }
  const auto first = count_row(config);
  BOOST_TEST_REQUIRE(first.has_value());  // the first process counted, and kept the count
  const std::int64_t now = static_cast<std::int64_t>(std::time(nullptr));
  BOOST_TEST(std::abs(first->second - now) <= 5);
  BOOST_TEST(first->first >= total_bytes(config) / 2);  // its entry's bytes added (a guess, rounded up)
  // A file the entries' writes don't make: a full count finds it, the row does not.
  constexpr std::size_t k_junk = 8u << 20;
  junk_in_the_mirror(config, k_junk);
  { kjit::Cache(config).get(small_program("count_b"), k_arch); }
  const auto second = count_row(config);
  BOOST_TEST_REQUIRE(second.has_value());
  BOOST_TEST(second->second == first->second);  // no count again: the row was taken
  BOOST_TEST(second->first > first->first);     // and the second entry's write added to it
  BOOST_TEST(second->first < first->first + k_junk / 2, second->first << " bytes counted");
  BOOST_TEST(kjit::Cache(config).disk_entries() == 2u);
}

// A count older than a day, or one that reads as no count, is made again by the next write (what
// the additions guessed, and writes no addition saw, made right).
BOOST_AUTO_TEST_CASE(an_old_or_unreadable_count_is_made_again)
{
  config.max_size = std::size_t(1) << 30;
  { kjit::Cache(config).get(small_program("recount_a"), k_arch); }
  constexpr std::size_t k_junk = 8u << 20;
  junk_in_the_mirror(config, k_junk);
  const std::int64_t now = static_cast<std::int64_t>(std::time(nullptr));
  int round = 0;
  for (const std::string& stale : {"1 " + std::to_string(now - 2 * 24 * 3600), std::string("lots of bytes"),
                                   "1 " + std::to_string(now + 3600)}) {
    set_count_row(config, stale);
    { kjit::Cache(config).get(small_program("recount_" + std::to_string(round++)), k_arch); }
    const auto count = count_row(config);
    BOOST_TEST_REQUIRE(count.has_value(), stale);
    BOOST_TEST(count->first >= k_junk, stale << ": " << count->first << " bytes counted");  // a full count
    BOOST_TEST(std::abs(count->second - now) <= 5, stale);
  }
}

// A count that says the store is past its limit makes the write evict, after a full count that
// finds what is really there (a count too high evicts nothing that fits); clear() drops the count.
BOOST_AUTO_TEST_CASE(a_count_past_the_limit_is_checked_by_a_full_count_and_clear_drops_it)
{
  config.max_size = std::size_t(1) << 30;
  { kjit::Cache(config).get(small_program("over_a"), k_arch); }
  set_count_row(config, std::to_string(config.max_size * 2) + " " + std::to_string(std::time(nullptr)));
  { kjit::Cache(config).get(small_program("over_b"), k_arch); }
  BOOST_TEST(kjit::Cache(config).disk_entries() == 2u);  // nothing evicted: they fit
  const auto count = count_row(config);
  BOOST_TEST_REQUIRE(count.has_value());
  BOOST_TEST(count->first < config.max_size);  // the full count's
  kjit::Cache(config).clear();
  BOOST_TEST(!count_row(config).has_value());
}

// A write of a process without a limit (KJIT_MAX_SIZE=0) adds to the store's count too: the count
// stayed where it was, and a limited process took it for up to a day, the store past its limit
// (found by a review: 11 entries where a limit of 200 KiB kept 4).
BOOST_AUTO_TEST_CASE(a_write_without_a_limit_adds_to_the_count)
{
  config.max_size = std::size_t(1) << 30;
  { kjit::Cache(config).get(small_program("unlimited_a"), k_arch); }
  const auto before = count_row(config);
  BOOST_TEST_REQUIRE(before.has_value());
  kjit::Config unlimited = config;
  unlimited.max_size = 0;
  { kjit::Cache(unlimited).get(small_program("unlimited_b"), k_arch); }
  const auto after = count_row(config);
  BOOST_TEST_REQUIRE(after.has_value());
  BOOST_TEST(after->first > before->first);
  BOOST_TEST(after->second == before->second);
}

BOOST_AUTO_TEST_SUITE_END()
