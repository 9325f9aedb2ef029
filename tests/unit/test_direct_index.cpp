// The direct index (docs/cache-format.md): raw inputs → entry key by XXH3-128, never trusted
// without comparing the inputs in full, so no collision or stale row can serve another binary.
#include <boost/test/unit_test.hpp>

#include "fixture.hpp"

#include "cache/direct_index.hpp"
#include "store/record.hpp"
#include "store/store.hpp"
#include "util/bytes.hpp"
#include "util/hash.hpp"

#include <map>
#include <set>

using namespace kjit::test;

namespace {

// The direct rows of the store of `cache`, by the name of the program whose entry they name.
std::map<std::string, std::pair<std::string, std::string>> direct_rows(kjit::Cache& cache,
                                                                       const std::vector<kjit::Program>& programs)
{
  std::map<std::string, std::pair<std::string, std::string>> rows;
  auto store = kjit::store::Store::open(cache.store_path(), std::size_t(1) << 30);
  store->for_each(kjit::store::Table::direct, [&](std::string_view key, std::string_view value) {
    const std::string named = kjit::util::to_hex(reinterpret_cast<const std::uint8_t*>(value.data()), 32);
    for (const kjit::Program& program : programs) {
      if (cache.prepare(program, kjit::Arch::parse("sm_90")).key() == named) {
        rows[program.name] = {std::string(key), std::string(value)};
      }
    }
  });
  return rows;
}

// Compiles `program` for sm_90 in a Cache of its own: its cubin, and its one direct row (fast key, value).
std::pair<std::string, std::pair<std::string, std::string>> compiled_with_row(const kjit::Config& config,
                                                                              const kjit::Program& program)
{
  kjit::Cache cache(config);
  std::string cubin = cache.get(program, kjit::Arch::parse("sm_90"))->cubin;
  const auto rows = direct_rows(cache, {program});
  BOOST_REQUIRE(rows.size() == 1u);
  return {cubin, rows.at(program.name)};
}

// Writes `value` as the direct row under `fast` in the store of `cache` (a planted row).
void plant_row(const kjit::Cache& cache, const std::string& fast, const std::string& value)
{
  auto store = kjit::store::Store::open(cache.store_path(), std::size_t(1) << 30);
  store->put({{kjit::store::Table::direct, fast, value}});
}

// A later process gets `program`'s own binary from the disk, compiling and quarantining nothing.
void served_from_disk(const kjit::Config& config, const kjit::Program& program, const std::string& cubin)
{
  kjit::Cache later(config);
  const kjit::Lookup hit = later.lookup(program, kjit::Arch::parse("sm_90"));
  BOOST_TEST(hit.binary->cubin == cubin);           // never another program's binary
  BOOST_TEST((hit.source == kjit::Source::disk));  // found by its SHA-256 key instead
  BOOST_TEST(later.stats().compiles == 0u);
  BOOST_TEST(later.stats().quarantined == 0u);
}

} // namespace

BOOST_FIXTURE_TEST_SUITE(direct_index, CacheFixture)

BOOST_AUTO_TEST_CASE(a_compile_stores_a_direct_row_naming_its_entry_and_inputs)
{
  const kjit::Program program = small_program("direct_row");
  const kjit::Arch arch = kjit::Arch::parse("sm_90");
  kjit::Cache cache(config);
  cache.get(program, arch);
  const auto rows = direct_rows(cache, {program});
  BOOST_REQUIRE(rows.count(program.name) == 1u);
  const auto& [fast, value] = rows.at(program.name);
  BOOST_TEST(fast.size() == 16u);
  // Format 6: the row is the entry key and the inputs' length (small, on LMDB's leaf pages); the
  // inputs are in the record, whose copy a hit compares.
  BOOST_TEST(value.size() == kjit::cache::k_direct_row_size);
  const std::string key_hex = cache.prepare(program, arch).key();
  auto store = kjit::store::Store::open(cache.store_path(), std::size_t(1) << 30);
  const std::string record = store->get(kjit::store::Table::entries, value.substr(0, 32)).value();
  const auto inputs = kjit::store::input_field(record, kjit::store::InputField::direct_inputs);
  BOOST_REQUIRE(inputs.has_value());
  BOOST_TEST(kjit::util::to_hex(kjit::util::checksum(*inputs)) ==
             kjit::util::to_hex(reinterpret_cast<const std::uint8_t*>(fast.data()), fast.size()));
  BOOST_TEST(inputs->find(program.source) != std::string_view::npos);
  BOOST_TEST(kjit::util::get_int<std::uint64_t>(value, 32) == inputs->size());

  kjit::Cache later(config);  // a later process: found through the row
  BOOST_TEST((later.lookup(program, arch).source == kjit::Source::disk));
  // A disk hit enters the memory tier on its second one (docs/configuration.md, "Memory tier").
  BOOST_TEST((later.lookup(program, arch).source == kjit::Source::disk));
  BOOST_TEST((later.lookup(program, arch).source == kjit::Source::memory));
  BOOST_TEST(later.stats().compiles == 0u);
}

BOOST_AUTO_TEST_CASE(a_colliding_direct_row_gets_a_miss_never_the_other_binary)
{
  const kjit::Arch arch = kjit::Arch::parse("sm_90");
  const kjit::Program a = small_program("collide_a");
  const kjit::Program b = small_program("collide_b");
  std::string cubin_a;
  std::string cubin_b;
  {
    kjit::Cache cache(config);
    cubin_a = cache.get(a, arch)->cubin;
    cubin_b = cache.get(b, arch)->cubin;
    BOOST_REQUIRE(cubin_a != cubin_b);
    // What an XXH3-128 collision of a's and b's inputs would leave: a's fast key holding b's row.
    // The inputs have the same length, so only the record's copy of the inputs can tell.
    const auto rows = direct_rows(cache, {a, b});
    BOOST_REQUIRE(rows.size() == 2u);
    BOOST_REQUIRE(rows.at(a.name).second.substr(32) == rows.at(b.name).second.substr(32));
    plant_row(cache, rows.at(a.name).first, rows.at(b.name).second);
  }
  served_from_disk(config, a, cubin_a);
  served_from_disk(config, b, cubin_b);
  // The same with b already in the memory tier: the row names an entry held in memory, and the
  // record's inputs still decide.
  kjit::Cache third(config);
  BOOST_TEST(third.lookup(b, arch).binary->cubin == cubin_b);
  BOOST_TEST(third.lookup(b, arch).binary->cubin == cubin_b);
  BOOST_TEST(third.lookup(a, arch).binary->cubin == cubin_a);
  BOOST_TEST(third.lookup(a, arch).binary->cubin == cubin_a);
  BOOST_TEST(third.stats().compiles == 0u);
}

// A row of the right length naming a record that holds no raw inputs (a program found through
// its headers): another program's entry, neither served nor quarantined.
BOOST_AUTO_TEST_CASE(a_row_naming_a_record_without_raw_inputs_leads_nowhere)
{
  const kjit::Arch arch = kjit::Arch::parse("sm_90");
  const kjit::Program direct = small_program("row_to_other");
  kjit::Program other = small_program("not_direct");
  other.options.push_back("-I" + tmp.path());
  std::string cubin;
  {
    kjit::Cache cache(config);
    cubin = cache.get(direct, arch)->cubin;
    BOOST_REQUIRE(cache.get(other, arch)->cubin != cubin);
    const auto rows = direct_rows(cache, {direct});
    BOOST_REQUIRE(rows.size() == 1u);
    std::string value = rows.at(direct.name).second;
    const std::string other_key = cache.prepare(other, arch).key();
    for (std::size_t i = 0; i < 32; ++i) {
      value[i] = static_cast<char>(std::stoi(other_key.substr(2 * i, 2), nullptr, 16));
    }
    plant_row(cache, rows.at(direct.name).first, value);
  }
  served_from_disk(config, direct, cubin);
  BOOST_TEST(kjit::Cache(config).disk_entries() == 2u);
}

BOOST_AUTO_TEST_CASE(a_row_naming_a_missing_or_damaged_entry_falls_back_to_the_key)
{
  const kjit::Program program = small_program("stale_row");
  const auto [cubin, row] = compiled_with_row(config, program);
  std::string value = row.second;
  value[0] = static_cast<char>(value[0] ^ 0x5a);  // names an entry that does not exist
  plant_row(kjit::Cache(config), row.first, value);
  served_from_disk(config, program, cubin);
}

BOOST_AUTO_TEST_CASE(the_memory_index_compares_inputs_in_full)
{
  kjit::cache::DirectIndex index;
  const kjit::util::Checksum fast = kjit::util::checksum("a");
  kjit::util::Sha256 key{};
  key[0] = 7;
  index.insert(fast, "inputs of a", key);
  BOOST_TEST((index.find(fast, "inputs of a") == key));
  BOOST_TEST(!index.find(fast, "inputs of b"));  // same fast key, other inputs: a collision
  BOOST_TEST(!index.find(kjit::util::checksum("b"), "inputs of a"));
}

BOOST_AUTO_TEST_CASE(every_input_of_the_key_changes_the_direct_inputs)
{
  const kjit::Arch arch = kjit::Arch::parse("sm_90");
  const kjit::Program base = small_program("inputs");
  kjit::cache::KeyContext context;
  context.nvrtc_identity = "13.0";
  const std::string text = kjit::cache::inputs_toolchain(context);
  const std::string reference = kjit::cache::direct_inputs(base, arch, text);
  std::vector<std::string> variants;
  kjit::cache::KeyContext other = context;
  other.nvrtc_identity = "13.1";
  variants.push_back(kjit::cache::direct_inputs(base, arch, kjit::cache::inputs_toolchain(other)));
  other = context;
  other.toolkit_include_names = {"include"};
  variants.push_back(kjit::cache::direct_inputs(base, arch, kjit::cache::inputs_toolchain(other)));
  // The toolkit headers' fingerprint is in neither its key nor its direct inputs: a program that
  // names no disk header reads no toolkit header (key.cpp).
  other = context;
  other.toolkit_headers = std::string("fingerprint");
  BOOST_TEST(kjit::cache::inputs_toolchain(other) == text);
  BOOST_TEST(kjit::cache::make_key_texts(base, arch, other).hex() == kjit::cache::make_key_texts(base, arch, context).hex());
  variants.push_back(kjit::cache::direct_inputs(base, kjit::Arch::parse("sm_80"), text));
  for (int field = 0; field < 5; ++field) {
    kjit::Program program = base;
    switch (field) {
    case 0: program.name += "x"; break;
    case 1: program.source += " "; break;
    case 2: program.headers["h.h"] = ""; break;
    case 3: program.options.push_back("-DX"); break;
    case 4: program.name_expressions.push_back("f"); break;
    }
    variants.push_back(kjit::cache::direct_inputs(program, arch, text));
  }
  for (const std::string& variant : variants) {
    BOOST_TEST(variant != reference);
  }
  // Moving a byte from one field to the next changes them too (fields are length-prefixed).
  kjit::Program shifted = base;
  shifted.options = {"-DAB"};
  kjit::Program split = base;
  split.options = {"-DA", "B"};
  BOOST_TEST(kjit::cache::direct_inputs(shifted, arch, text) != kjit::cache::direct_inputs(split, arch, text));
}

BOOST_AUTO_TEST_CASE(programs_that_may_read_disk_headers_are_not_direct)
{
  BOOST_TEST(kjit::cache::direct_eligible(small_program("plain")));
  kjit::Program program = small_program("includes");
  program.source = "#include \"x.h\"\n" + program.source;
  BOOST_TEST(!kjit::cache::direct_eligible(program));
  for (const char* option : {"-I/tmp", "--include-path=/tmp", "--pre-include=x.h", "-include=x.h"}) {
    kjit::Program with = small_program("options");
    with.options.push_back(option);
    BOOST_TEST(!kjit::cache::direct_eligible(with));
  }
  kjit::Program header = small_program("header");
  header.headers["a.h"] = "#include <b.h>\n";
  BOOST_TEST(!kjit::cache::direct_eligible(header));
  BOOST_TEST(kjit::cache::direct_options(header));  // looked for directly, never found
}

BOOST_AUTO_TEST_CASE(a_program_naming_a_header_is_never_kept_by_its_raw_inputs)
{
  // "include" in a comment: not direct, so a later edit of what it might include is always seen.
  kjit::Program program = small_program("commented");
  program.source = "// include nothing\n" + program.source;
  const kjit::Arch arch = kjit::Arch::parse("sm_90");
  kjit::Cache cache(config);
  cache.get(program, arch);
  BOOST_TEST(direct_rows(cache, {program}).empty());
  BOOST_TEST((cache.lookup(program, arch).source == kjit::Source::memory));
  kjit::Cache later(config);
  BOOST_TEST((later.lookup(program, arch).source == kjit::Source::disk));
  BOOST_TEST(later.stats().compiles == 0u);
}

// Guards the memory tier against header edits (docs/includes.md: "A lookup stats each folder
// and header"): a program that includes a disk header, found by its key, must never also be kept
// in the memory index by its raw inputs, which hold no header. Kept there, the same Cache served
// the binary of the header's old content after an edit (a semantic mutant: docs/testing.md).
BOOST_AUTO_TEST_CASE(the_same_cache_sees_an_edited_header_next_to_the_source)
{
  const std::string dir = tmp.path() + "/src";
  put(dir + "/value.h", "#define VALUE 1111\n");
  settle();  // old enough for a manifest: the second lookup is a memory hit by the final key
  kjit::Program program;
  program.name = dir + "/edited.cu";
  program.source = "#include \"value.h\"\nextern \"C\" __global__ void k(int* out) { *out = VALUE; }\n";
  const kjit::Arch arch = kjit::Arch::parse("sm_90");
  kjit::Cache cache(config);
  BOOST_TEST(cache.get(program, arch)->ptx.find("1111") != std::string::npos);
  BOOST_TEST((cache.lookup(program, arch).source == kjit::Source::memory));
  write_text(dir + "/value.h", "#define VALUE 22222\n");
  const kjit::Lookup edited = cache.lookup(program, arch);
  BOOST_TEST(edited.binary->ptx.find("22222") != std::string::npos);
  BOOST_TEST((edited.source == kjit::Source::compiled));
}


// Direct rows hold a program's whole inputs (as much as its record): an entry removed by the size
// limit or a prune takes its row along, or the store grows without bound under KJIT_MAX_SIZE.
BOOST_AUTO_TEST_CASE(evicted_and_pruned_entries_take_their_direct_rows_along)
{
  const kjit::Arch arch = kjit::Arch::parse("sm_90");
  const auto row_keys = [&](const kjit::Cache& cache) {
    std::set<std::string> keys;
    auto store = kjit::store::Store::open(cache.store_path(), std::size_t(1) << 30);
    store->for_each(kjit::store::Table::direct, [&](std::string_view, std::string_view value) {
      keys.insert(kjit::util::to_hex(reinterpret_cast<const std::uint8_t*>(value.data()), 32));
    });
    return keys;
  };
  const auto entry_keys = [&](kjit::Cache& cache) {
    std::set<std::string> keys;
    for (const auto& info : cache.entries()) {
      keys.insert(info.key);
    }
    return keys;
  };
  config.max_size = 200 * 1024;
  config.mirror = false;
  {
    kjit::Cache cache(config);
    for (int i = 0; i < 40; ++i) {
      kjit::Program program = small_program("evicted" + std::to_string(i));
      std::string noise;  // incompressible: the record is as large as the row
      for (std::uint32_t x = 2654435761u * (i + 1); noise.size() < 6000; x = x * 1664525u + 1013904223u) {
        noise += static_cast<char>('a' + (x >> 24) % 26);
      }
      program.source += "// " + noise + "\n";
      cache.get(program, arch);
    }
    const std::set<std::string> entries = entry_keys(cache);
    BOOST_REQUIRE(entries.size() < 40u);  // the limit removed some
    const std::set<std::string> rows = row_keys(cache);
    BOOST_TEST(rows.size() == entries.size());
    BOOST_TEST((rows == entries));
    cache.prune_to_size(0);
    BOOST_TEST(entry_keys(cache).empty());
    BOOST_TEST(row_keys(cache).empty());
  }
}

BOOST_AUTO_TEST_CASE(a_damaged_record_reached_through_its_row_is_quarantined_and_compiled_again)
{
  const kjit::Arch arch = kjit::Arch::parse("sm_90");
  const kjit::Program program = small_program("damaged_through_row");
  const auto [cubin, row] = compiled_with_row(config, program);
  {
    const std::string key = row.second.substr(0, 32);
    auto store = kjit::store::Store::open(kjit::Cache(config).store_path(), std::size_t(1) << 30);
    std::string record = store->get(kjit::store::Table::entries, key).value();
    record[record.size() / 2] = static_cast<char>(record[record.size() / 2] ^ 0x01);
    store->put({{kjit::store::Table::entries, key, record}});
  }
  kjit::Cache later(config);
  const kjit::Lookup first = later.lookup(program, arch);
  BOOST_TEST(first.binary->cubin == cubin);
  BOOST_TEST((first.source == kjit::Source::compiled));
  BOOST_TEST(later.stats().quarantined == 1u);
  kjit::Cache third(config);
  BOOST_TEST((third.lookup(program, arch).source == kjit::Source::disk));  // the row leads to the new record
  BOOST_TEST(third.stats().compiles == 0u);
}

BOOST_AUTO_TEST_SUITE_END()
