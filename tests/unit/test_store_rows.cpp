// The rows that lead to an entry (direct rows, manifests) are counted by the size limit and go
// with the entry when it is evicted, pruned or quarantined by `kjit verify --repair`.
#include <boost/test/unit_test.hpp>

#include "fixture.hpp"
#include "write_lock.hpp"

#include "store/store.hpp"
#include "util/hash.hpp"

#include <filesystem>
#include <set>

using namespace kjit::test;

namespace {

std::shared_ptr<kjit::store::Store> open_store(const kjit::Cache& cache)
{
  return kjit::store::Store::open(cache.store_path(), std::size_t(1) << 30);
}

// Bytes of every row of `table` (keys and values).
std::size_t table_bytes(const kjit::Cache& cache, kjit::store::Table table)
{
  std::size_t bytes = 0;
  open_store(cache)->for_each(table, [&](std::string_view key, std::string_view value) {
    bytes += key.size() + value.size();
  });
  return bytes;
}

// A program whose source is `size` bytes of incompressible comment after a small kernel.
kjit::Program noisy_program(const std::string& tag, int seed, std::size_t size)
{
  kjit::Program program = small_program(tag);
  std::string noise;
  for (std::uint32_t x = 2654435761u * static_cast<std::uint32_t>(seed + 1); noise.size() < size;
       x = x * 1664525u + 1013904223u) {
    noise += static_cast<char>('a' + (x >> 24) % 26);
  }
  program.source += "// " + noise + "\n";
  return program;
}

// A file `name` in `dir` of `size` bytes of hardly compressible comment (its blob is about as big).
void big_header(const std::string& dir, const std::string& name, int seed, std::size_t size)
{
  std::string text = "// ";
  for (std::uint32_t x = 2654435761u * static_cast<std::uint32_t>(seed + 1); text.size() < size;
       x = x * 1664525u + 1013904223u) {
    text += static_cast<char>('a' + (x >> 24) % 26);
    text += text.size() % 100 == 99 ? "\n// " : "";
  }
  put(dir + "/" + name, text + "\n");
}

} // namespace

BOOST_FIXTURE_TEST_SUITE(store_rows, CacheFixture)

// KJIT_MAX_SIZE bounds what an entry costs in the store, the rows that lead to it included: a
// count of the records alone let direct rows (once the program's whole inputs) double the store.
BOOST_AUTO_TEST_CASE(the_size_limit_counts_the_rows_that_lead_to_entries)
{
  const kjit::Arch arch = kjit::Arch::parse("sm_90");
  config.max_size = 200 * 1024;
  config.mirror = false;
  kjit::Cache cache(config);
  for (int i = 0; i < 40; ++i) {
    cache.get(noisy_program("limit" + std::to_string(i), i, 6000), arch);
  }
  const std::size_t stored = table_bytes(cache, kjit::store::Table::entries) +
                             table_bytes(cache, kjit::store::Table::direct) +
                             table_bytes(cache, kjit::store::Table::manifests);
  BOOST_TEST(cache.disk_entries() < 40u);  // the limit removed some
  BOOST_TEST(stored <= config.max_size);
}

// `kjit verify --repair` quarantines a damaged record: the direct row that led to it goes too.
BOOST_AUTO_TEST_CASE(verify_repair_removes_the_direct_rows_of_quarantined_records)
{
  const kjit::Arch arch = kjit::Arch::parse("sm_90");
  const kjit::Program good = small_program("repair_good");
  const kjit::Program bad = small_program("repair_bad");
  kjit::Cache cache(config);
  cache.get(good, arch);
  cache.get(bad, arch);
  const std::string bad_key = cache.prepare(bad, arch).key();
  auto store = open_store(cache);
  BOOST_REQUIRE(store->count(kjit::store::Table::direct) == 2u);
  std::string raw(32, '\0');
  for (std::size_t i = 0; i < 32; ++i) {
    raw[i] = static_cast<char>(std::stoi(bad_key.substr(2 * i, 2), nullptr, 16));
  }
  std::string bytes = store->get(kjit::store::Table::entries, raw).value();
  bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 0x40);
  store->put(kjit::store::Table::entries, raw, bytes);

  BOOST_TEST(cache.verify(kjit::Repair::quarantine).quarantined == 1u);
  std::set<std::string> named;
  store->for_each(kjit::store::Table::direct, [&](std::string_view, std::string_view value) {
    named.insert(kjit::util::to_hex(reinterpret_cast<const std::uint8_t*>(value.data()), 32));
  });
  BOOST_TEST(named.size() == 1u);
  BOOST_TEST(named.count(bad_key) == 0u);
  BOOST_TEST(named.count(cache.prepare(good, arch).key()) == 1u);
}

// Manifests (the headers a program read, by its direct key) go with the entries they lead to.
BOOST_AUTO_TEST_CASE(evicted_and_pruned_entries_take_their_manifests_along)
{
  const kjit::Arch arch = kjit::Arch::parse("sm_90");
  std::filesystem::create_directories(tmp.path() + "/inc");
  write_text(tmp.path() + "/inc/value.h", "#define VALUE 3\n");
  settle();
  config.max_size = 150 * 1024;
  config.mirror = false;
  kjit::Cache cache(config);
  for (int i = 0; i < 30; ++i) {
    kjit::Program program = noisy_program("manifest" + std::to_string(i), i, 4000);
    program.source = "#include \"value.h\"\n" + program.source;
    program.options.push_back("-I" + tmp.path() + "/inc");
    cache.get(program, arch);
  }
  auto store = open_store(cache);
  const std::size_t entries = cache.disk_entries();
  BOOST_REQUIRE(entries < 30u);  // the limit removed some
  BOOST_TEST(manifest_rows(*store).size() == entries);
  BOOST_TEST(manifest_heads(*store) == entries);  // each with its head (deps/manifest_head.hpp)
  cache.prune_to_size(0);
  BOOST_TEST(cache.disk_entries() == 0u);
  BOOST_TEST(store->count(kjit::store::Table::manifests) == 0u);  // the heads too
}

// `kjit cache orphans --remove` deletes records no lookup can use; the direct rows naming them go too.
BOOST_AUTO_TEST_CASE(removed_orphans_take_their_direct_rows_along)
{
  const kjit::Arch arch = kjit::Arch::parse("sm_90");
  const kjit::Program program = small_program("orphaned");
  kjit::Cache cache(config);
  cache.get(program, arch);
  auto store = open_store(cache);
  std::string row_key;
  std::string row;
  store->for_each(kjit::store::Table::direct, [&](std::string_view key, std::string_view value) {
    row_key = key;
    row = value;
  });
  BOOST_REQUIRE(row.size() >= 32u);
  // The record becomes one of another format (what an older kjit left): an orphan.
  std::string record = store->get(kjit::store::Table::entries, row.substr(0, 32)).value();
  record[8] = static_cast<char>(record[8] + 1);
  store->put(kjit::store::Table::entries, row.substr(0, 32), record);
  BOOST_REQUIRE(cache.orphans().size() == 1u);
  BOOST_TEST(cache.remove_orphans() == 1u);
  BOOST_TEST(store->count(kjit::store::Table::entries) == 0u);
  BOOST_TEST(!store->get(kjit::store::Table::direct, row_key).has_value());
}

// A store an older kjit filled (records of another format, their direct rows and mirror folders)
// under KJIT_MAX_SIZE: the records no lookup can use are evicted first, never this build's new
// entries while the old ones stay (each write then evicted every new entry).
BOOST_AUTO_TEST_CASE(records_of_another_format_are_evicted_before_new_entries)
{
  const kjit::Arch arch = kjit::Arch::parse("sm_90");
  {
    kjit::Cache cache(config);
    for (int i = 0; i < 20; ++i) {
      cache.get(noisy_program("old" + std::to_string(i), i, 6000), arch);
    }
  }
  {
    auto store = open_store(kjit::Cache(config));
    std::vector<kjit::store::Store::Row> rows;
    store->for_each(kjit::store::Table::entries, [&](std::string_view key, std::string_view value) {
      std::string record(value);
      record[8] = 5;  // format 5: what the previous build wrote
      rows.push_back({kjit::store::Table::entries, std::string(key), std::move(record)});
    });
    store->put(rows);
  }
  config.max_size = 300 * 1024;  // three new entries fit (records and mirror folders)
  kjit::Cache cache(config);
  BOOST_REQUIRE(cache.usage().record_bytes + cache.usage().mirror_bytes > config.max_size);
  std::vector<kjit::Program> fresh;
  for (int i = 0; i < 3; ++i) {
    fresh.push_back(noisy_program("new" + std::to_string(i), 100 + i, 6000));
    cache.get(fresh.back(), arch);
  }
  kjit::Cache again(config);
  for (const kjit::Program& program : fresh) {
    again.get(program, arch);
  }
  BOOST_TEST(again.stats().compiles == 0u);  // the new entries stayed
  BOOST_TEST(cache.orphans().size() < 20u);  // old ones went, with their names rows
  auto store = open_store(cache);
  BOOST_TEST(store->count(kjit::store::Table::names) == store->count(kjit::store::Table::entries));
}

// One entry reached by two programs whose raw inputs differ (the same header in two folders: one
// key, two direct keys): the second's manifest, written on its disk hit, goes with the entry too.
BOOST_AUTO_TEST_CASE(a_manifest_written_on_a_disk_hit_goes_with_its_entry)
{
  const kjit::Arch arch = kjit::Arch::parse("sm_90");
  std::vector<kjit::Program> programs;
  for (const char* folder : {"/one", "/two"}) {
    std::filesystem::create_directories(tmp.path() + folder);
    write_text(tmp.path() + folder + "/value.h", "#define VALUE 3\n");
    kjit::Program program = small_program("two_folders");
    program.source = "#include \"value.h\"\n" + program.source;
    program.options.push_back(std::string("-I") + tmp.path() + folder);
    programs.push_back(program);
  }
  settle();
  config.mirror = false;
  kjit::Cache cache(config);
  cache.get(programs[0], arch);
  kjit::Cache other(config);
  other.get(programs[1], arch);
  BOOST_REQUIRE(other.stats().disk_hits == 1u);  // one entry for both
  auto store = open_store(cache);
  BOOST_REQUIRE(manifest_rows(*store).size() == 2u);
  BOOST_TEST(cache.prune_to_size(0) == 1u);
  BOOST_TEST(store->count(kjit::store::Table::manifests) == 0u);
}

// The header blobs a write adds count against KJIT_MAX_SIZE at that write. They were counted one
// write late (the blob table's size read before the commit, on the writer thread, had landed): a
// write that took the store over the limit evicted nothing until the next write.
BOOST_AUTO_TEST_CASE(a_write_s_header_blobs_count_at_that_write)
{
  const kjit::Arch arch = kjit::Arch::parse("sm_90");
  config.max_size = 100 * 1024;
  config.mirror = false;
  for (int i = 0; i < 2; ++i) {
    const std::string dir = tmp.path() + "/p" + std::to_string(i);
    big_header(dir, "big.h", i, i == 0 ? 1024 : 200 * 1024);
    put(dir + "/k.cu",
        "#include \"big.h\"\nextern \"C\" __global__ void k(int* o) { *o = " + std::to_string(i) + "; }\n");
  }
  settle();
  kjit::Cache cache(config);
  BOOST_TEST_REQUIRE(cache.get(kjit::program_from_file(tmp.path() + "/p0/k.cu"), arch) != nullptr);  // counted in full
  {
    WriteLockHolder holder(config, 2);  // the commit lands after get() returns, as it may anyway
    BOOST_TEST_REQUIRE(cache.get(kjit::program_from_file(tmp.path() + "/p1/k.cu"), arch) != nullptr);
  }
  cache.stats();  // the commit and what follows it are done
  const std::size_t stored =
    table_bytes(cache, kjit::store::Table::entries) + table_bytes(cache, kjit::store::Table::blobs);
  BOOST_TEST(stored <= config.max_size, stored << " bytes stored under a limit of " << config.max_size);
}

BOOST_AUTO_TEST_SUITE_END()
