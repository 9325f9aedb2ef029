// Headers stored once (store blobs and the mirror's shared headers/), zstd-compressed fields, the
// background mirror writer and its index: damage to any of them is a typed error, never a wrong hit.
#include <boost/test/unit_test.hpp>

#include "fixture.hpp"

#include "store/blobs.hpp"
#include "store/record.hpp"
#include "store/store.hpp"
#include "util/bytes.hpp"
#include "util/hash.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <lmdb.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

using namespace kjit::test;

namespace {

const kjit::Arch k_sm90 = kjit::Arch::parse("sm_90");

std::string raw(const std::string& hex)
{
  std::string out;
  for (std::size_t i = 0; i < hex.size(); i += 2) {
    out += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  }
  return out;
}

// A header of ~24 KB that many programs share, like a library header.
std::string shared_header()
{
  std::string text = "#pragma once\n";
  for (int i = 0; i < 600; ++i) {
    text += "#define SHARED_CONSTANT_" + std::to_string(i) + " (" + std::to_string(i * 7) + ")\n";
  }
  return text;
}

kjit::Program with_header(const std::string& tag, const std::string& header)
{
  kjit::Program program = small_program(tag);
  program.headers["lib/shared.h"] = header;
  program.source = "#include \"lib/shared.h\"\n" + program.source;
  return program;
}

// The number of entries `blob_refs` counts for the blob of `content` (0: no count row).
std::uint64_t users_of(const kjit::store::Store& store, const std::string& content)
{
  const auto count = store.get(kjit::store::Table::blob_refs, kjit::store::blob_key(kjit::util::sha256(content)));
  return count ? kjit::store::decode_users(*count).value_or(0) : 0;
}

// Writes `value` under `key` in the store's `table`, bypassing the store (as damage would): no
// Store may be open in this process meanwhile.
void plant_raw(const std::string& store_dir, const char* table, const std::string& key, const std::string& value)
{
  MDB_env* env = nullptr;
  BOOST_TEST_REQUIRE(mdb_env_create(&env) == 0);
  mdb_env_set_maxdbs(env, 16);
  mdb_env_set_mapsize(env, std::size_t(1) << 30);
  BOOST_TEST_REQUIRE(mdb_env_open(env, store_dir.c_str(), 0, 0600) == 0);
  MDB_txn* txn = nullptr;
  BOOST_TEST_REQUIRE(mdb_txn_begin(env, nullptr, 0, &txn) == 0);
  MDB_dbi dbi = 0;
  BOOST_TEST_REQUIRE(mdb_dbi_open(txn, table, 0, &dbi) == 0);
  MDB_val k{key.size(), const_cast<char*>(key.data())};
  MDB_val v{value.size(), const_cast<char*>(value.data())};
  BOOST_TEST_REQUIRE(mdb_put(txn, dbi, &k, &v, 0) == 0);
  BOOST_TEST_REQUIRE(mdb_txn_commit(txn) == 0);
  mdb_env_close(env);
}

// Recomputes both section checksums of a record whose bytes were edited (a forged record).
void reseal(std::string& record)
{
  const std::uint64_t artifacts = kjit::util::get_int<std::uint64_t>(record, 16);
  XXH3_state_t state;
  XXH3_INITSTATE(&state);
  XXH3_128bits_reset(&state);
  XXH3_128bits_update(&state, record.data() + 8, 8);
  XXH3_128bits_update(&state, record.data() + 64, artifacts);
  XXH128_canonical_t canonical;
  XXH128_canonicalFromHash(&canonical, XXH3_128bits_digest(&state));
  std::memcpy(record.data() + 24, canonical.digest, 16);
  const kjit::util::Checksum inputs = kjit::util::checksum(std::string_view(record).substr(64 + artifacts));
  std::memcpy(record.data() + 48, inputs.data(), 16);
}

// A program whose PTX is over 16 KiB (stored compressed, format 5): hundreds of volatile stores.
kjit::Program big_ptx_program(const std::string& tag)
{
  kjit::Program program = small_program(tag);
  program.source += "extern \"C\" __global__ void big_" + tag + "(volatile int* p)\n{\n";
  for (int i = 0; i < 600; ++i) {
    program.source += "  p[" + std::to_string(i) + "] = " + std::to_string(i * 7 + 1) + ";\n";
  }
  program.source += "}\n";
  return program;
}

// The record with the frame of its first compressed field of `tag` cut by `cut` bytes (sizes and
// checksums made consistent again): only the zstd frame itself is wrong.
std::string truncate_compressed_field(std::string record, std::uint16_t tag, std::size_t cut)
{
  const std::uint64_t artifacts = kjit::util::get_int<std::uint64_t>(record, 16);
  for (std::size_t at = 64; at + 6 <= record.size();) {
    const auto code = kjit::util::get_int<std::uint16_t>(record, at);
    const auto length = kjit::util::get_int<std::uint32_t>(record, at + 2);
    if (code == (tag | 0x8000)) {
      record.erase(at + 6 + length - cut, cut);
      std::string field_length;
      kjit::util::put_int(field_length, static_cast<std::uint32_t>(length - cut));
      record.replace(at + 2, 4, field_length);
      std::string size;
      const bool in_artifacts = at < 64 + artifacts;
      kjit::util::put_int(size, in_artifacts ? artifacts - cut : kjit::util::get_int<std::uint64_t>(record, 40) - cut);
      record.replace(in_artifacts ? 16 : 40, 8, size);
      reseal(record);
      return record;
    }
    at += 6 + length;
  }
  BOOST_FAIL("no compressed field with tag " << tag);
  return record;
}

// Compiles `program` and returns its prepared form under the key it was stored under (a program
// that includes anything has a provisional key until its first compile recorded a manifest).
kjit::PreparedProgram stored(kjit::Cache& cache, const kjit::Program& program)
{
  cache.get(program, k_sm90);
  kjit::PreparedProgram prepared = cache.prepare(program, k_sm90);
  BOOST_TEST_REQUIRE(!prepared.provisional());
  return prepared;
}

// The raw keys of entries of `header`, one a tag (with_header()), stored by one Cache.
std::vector<std::string> stored_keys(const kjit::Config& config, const std::string& header,
                                     std::initializer_list<const char*> tags)
{
  std::vector<std::string> keys;
  kjit::Cache cache(config);
  for (const char* tag : tags) {
    keys.push_back(raw(stored(cache, with_header(tag, header)).key()));
  }
  return keys;
}

} // namespace

BOOST_FIXTURE_TEST_SUITE(blobs, CacheFixture)

// Issue 22: each entry kept a full copy of every header in the store and again in the mirror.
BOOST_AUTO_TEST_CASE(a_header_is_stored_once_for_every_entry_that_uses_it)
{
  const std::string header = shared_header();
  const std::string hash = kjit::util::to_hex(kjit::util::sha256(header));
  std::vector<kjit::PreparedProgram> prepared;
  kjit::Cache cache(config);
  for (const char* tag : {"one", "two", "three"}) {
    prepared.push_back(stored(cache, with_header(tag, header)));
  }
  auto store = kjit::store::Store::open(cache.store_path(), config.store_map_size);
  BOOST_TEST(store->count(kjit::store::Table::blobs) == 1u);
  BOOST_TEST(store->count(kjit::store::Table::blob_refs) == 1u);  // one count (a row per entry before)
  BOOST_TEST(users_of(*store, header) == 3u);
  for (const auto& p : prepared) {
    const std::string record = *store->get(kjit::store::Table::entries, raw(p.key()));
    BOOST_TEST(record.size() < header.size(), "the record holds the header: " << record.size() << " bytes");
    // The entry still names its header and its hash, and gives the content back.
    const kjit::EntryContents contents = cache.entry(p.key());
    BOOST_TEST(contents.headers.at("lib/shared.h") == header);
    BOOST_TEST(contents.info.source_bytes >= header.size());
  }
  // The mirror: one shared file, each entry's header a hard link to it (no block of its own).
  cache.flush_mirror();
  const std::string shared = config.cache_dir + "/programs/headers/" + hash;
  BOOST_TEST(read_text(shared) == header);
  struct stat st {};
  BOOST_TEST_REQUIRE(::stat(shared.c_str(), &st) == 0);
  BOOST_TEST(st.st_nlink == 4u);
  for (const auto& p : prepared) {
    const std::string link = config.cache_dir + "/programs/" + p.key() + "/module/headers/lib/shared.h";
    struct stat linked {};
    BOOST_TEST_REQUIRE(::lstat(link.c_str(), &linked) == 0);
    BOOST_TEST(linked.st_ino == st.st_ino);
    BOOST_TEST(read_text(link) == header);
  }
}

// Removal through the store's own path (prune, eviction, orphans) takes the blobs no entry uses.
BOOST_AUTO_TEST_CASE(removing_entries_collects_the_blobs_only_they_used)
{
  const std::string header = shared_header();
  kjit::Cache cache(config);
  const auto a = stored(cache, with_header("a", header));
  const auto b = stored(cache, with_header("b", header + "// b's own copy\n"));
  auto store = kjit::store::Store::open(cache.store_path(), config.store_map_size);
  BOOST_TEST(store->count(kjit::store::Table::blobs) == 2u);
  store->erase(kjit::store::Table::entries, {raw(a.key())});
  BOOST_TEST(store->count(kjit::store::Table::blobs) == 1u);
  BOOST_TEST(store->count(kjit::store::Table::blob_refs) == 1u);
  BOOST_TEST(cache.entry(b.key()).headers.at("lib/shared.h") == header + "// b's own copy\n");
  // A fresh compile of a brings its blob back; pruning everything leaves no blob and no shared file.
  const auto again = stored(cache, with_header("a2", header));
  BOOST_TEST(store->count(kjit::store::Table::blobs) == 2u);
  BOOST_TEST(cache.prune_to_size(0) == 2u);
  BOOST_TEST(store->count(kjit::store::Table::blobs) == 0u);
  BOOST_TEST(store->count(kjit::store::Table::blob_refs) == 0u);
  cache.flush_mirror();
  BOOST_TEST(!exists(config.cache_dir + "/programs/" + again.key()));
  BOOST_TEST(!exists(config.cache_dir + "/programs/" + b.key()));
  // a was erased behind the Cache's back: its folder (and the shared file it links) stays until a
  // rebuild, which leaves no shared header behind.
  BOOST_TEST(exists(config.cache_dir + "/programs/" + a.key()));
  BOOST_TEST(cache.rebuild_mirror() == 0u);
  std::string output;
  run("ls -A '" + config.cache_dir + "/programs/headers' 2>/dev/null", output);
  BOOST_TEST(output.empty(), output);
  // Clearing the entries clears the blobs with them.
  cache.get(again);
  BOOST_TEST(store->count(kjit::store::Table::blobs) == 1u);
  cache.clear();
  BOOST_TEST(store->count(kjit::store::Table::blobs) == 0u);
  BOOST_TEST(store->count(kjit::store::Table::blob_refs) == 0u);
}

// An entry's commit wrote a row per (blob, entry): a vendored CCCL's 1 691 keys spread over a tree
// that grows with every entry of those headers, so that each commit dirtied up to one page per
// header (38 ms of a miss's commit at ~100 entries, 7–12 ms at 16). A blob's entries are now a
// count: one row per blob, its pages the same few whatever the number of entries.
BOOST_AUTO_TEST_CASE(a_blobs_entries_are_counted_once_each)
{
  const std::string header = shared_header();
  const std::string other = header + "// another\n";
  kjit::Cache cache(config);
  std::vector<kjit::PreparedProgram> prepared;
  for (int i = 0; i < 12; ++i) {
    kjit::Program program = with_header("counted" + std::to_string(i), header);
    program.headers["lib/other.h"] = other;
    program.headers["lib/again.h"] = header;  // the same content twice: one use
    program.source = "#include \"lib/other.h\"\n#include \"lib/again.h\"\n" + program.source;
    prepared.push_back(stored(cache, program));
  }
  auto store = kjit::store::Store::open(cache.store_path(), config.store_map_size);
  BOOST_TEST(store->count(kjit::store::Table::blob_refs) == 2u);  // was 24
  BOOST_TEST(users_of(*store, header) == 12u);
  BOOST_TEST(users_of(*store, other) == 12u);
  // An entry stored again (another process compiled it too) is not counted again.
  const std::string key = raw(prepared[0].key());
  const std::string record = *store->get(kjit::store::Table::entries, key);
  const kjit::util::Sha256 hash = kjit::util::sha256(header);
  store->put({{kjit::store::Table::blobs, kjit::store::blob_key(hash), header},
              {kjit::store::Table::blob_refs, kjit::store::blob_ref_key(hash, key), "1"},
              {kjit::store::Table::entries, key, record}});
  BOOST_TEST(users_of(*store, header) == 12u);
  // Each removal takes one; the last takes the blobs.
  for (std::size_t i = 0; i < prepared.size(); ++i) {
    store->erase(kjit::store::Table::entries, {raw(prepared[i].key())});
    BOOST_TEST(users_of(*store, header) == prepared.size() - 1 - i);
    BOOST_TEST(store->count(kjit::store::Table::blobs) == (i + 1 < prepared.size() ? 2u : 0u));
  }
  BOOST_TEST(store->count(kjit::store::Table::blob_refs) == 0u);
}

// A store written before counts holds a row per (blob, entry): its blobs stay while its entries
// use them, next to entries counted since, and verify --repair turns its rows into counts.
BOOST_AUTO_TEST_CASE(a_store_of_rows_per_entry_keeps_its_blobs_and_is_swept_into_counts)
{
  const std::string header = shared_header();
  const std::vector<std::string> keys = stored_keys(config, header, {"old1", "old2", "new1"});
  const std::string blob = kjit::store::blob_key(kjit::util::sha256(header));
  {
    auto store = kjit::store::Store::open(config.cache_dir + "/store", config.store_map_size);
    store->erase(kjit::store::Table::blob_refs, {blob});
  }
  // As the older kjit wrote them: old1 and old2 by rows, new1 by a count of 1.
  plant_raw(config.cache_dir + "/store", "blob_refs", blob + keys[0], "1");
  plant_raw(config.cache_dir + "/store", "blob_refs", blob + keys[1], "1");
  plant_raw(config.cache_dir + "/store", "blob_refs", blob, kjit::store::encode_users(1));
  {
    auto store = kjit::store::Store::open(config.cache_dir + "/store", config.store_map_size);
    store->erase(kjit::store::Table::entries, {keys[2]});  // the counted one: its rows keep the blob
    BOOST_TEST(store->count(kjit::store::Table::blobs) == 1u);
    BOOST_TEST(users_of(*store, header) == 0u);
    store->erase(kjit::store::Table::entries, {keys[0]});
    BOOST_TEST(store->count(kjit::store::Table::blobs) == 1u);
    BOOST_TEST(store->count(kjit::store::Table::blob_refs) == 1u);
  }
  // Swept: old2's row becomes a count.
  {
    kjit::Cache cache(config);
    stored(cache, with_header("new2", header));
  }
  auto store = kjit::store::Store::open(config.cache_dir + "/store", config.store_map_size);
  BOOST_TEST(store->count(kjit::store::Table::blob_refs) == 2u);  // old2's row, new2's count
  const kjit::store::Store::BlobSweep swept = store->sweep_blobs();
  BOOST_TEST(swept.refs_removed == 1u);
  BOOST_TEST(swept.refs_added == 1u);
  BOOST_TEST(store->count(kjit::store::Table::blob_refs) == 1u);
  BOOST_TEST(users_of(*store, header) == 2u);
  store->erase(kjit::store::Table::entries, {keys[1]});
  BOOST_TEST(store->count(kjit::store::Table::blobs) == 1u);
  BOOST_TEST(kjit::Cache(config).disk_entries() == 1u);
}

// A damaged or missing blob: the hit is still served (artifacts are intact), whatever needs the
// header says which one is gone, and verify --repair removes the entry and the blob.
BOOST_AUTO_TEST_CASE(a_damaged_or_missing_blob_is_a_typed_error_and_verify_repairs_it)
{
  const std::string header = shared_header();
  const kjit::Program damaged_program = with_header("damaged", header);
  std::string damaged_key;
  std::string good_key;
  std::string cubin;
  {
    kjit::Cache cache(config);
    const auto prepared = stored(cache, damaged_program);
    cubin = cache.get(prepared)->cubin;
    damaged_key = prepared.key();
    const auto good = cache.prepare(small_program("good"), k_sm90);
    cache.get(good);
    good_key = good.key();
  }
  const std::string blob = kjit::util::to_hex(kjit::util::sha256(header));
  std::string bytes;
  {
    auto store = kjit::store::Store::open(config.cache_dir + "/store", config.store_map_size);
    bytes = *store->get(kjit::store::Table::blobs, raw(blob));
  }
  bytes[bytes.size() / 2] ^= 0x11;
  plant_raw(config.cache_dir + "/store", "blobs", raw(blob), bytes);

  kjit::Cache cache(config);
  BOOST_TEST(cache.get(damaged_program, k_sm90)->cubin == cubin);
  BOOST_TEST(cache.stats().disk_hits == 1u);
  BOOST_TEST(cache.stats().compiles == 0u);
  try {
    cache.entry(damaged_key);
    BOOST_FAIL("a damaged blob was read");
  } catch (const kjit::StoreError& e) {
    BOOST_TEST(std::string(e.what()).find("lib/shared.h") != std::string::npos, e.what());
    BOOST_TEST(std::string(e.what()).find("damaged") != std::string::npos, e.what());
  }
  BOOST_TEST(cache.export_bundle(tmp.path() + "/out.kjitpack", {}).skipped_damaged == 1u);
  std::size_t skipped = 0;
  BOOST_TEST(cache.rebuild_mirror(&skipped) == 1u);
  BOOST_TEST(skipped == 1u);

  const kjit::VerifyReport report = cache.verify(kjit::Repair::no);
  BOOST_TEST_REQUIRE(report.bad.size() == 1u);
  BOOST_TEST(report.bad[0].first == damaged_key);
  BOOST_TEST(report.bad[0].second.find("blob") != std::string::npos, report.bad[0].second);
  const kjit::VerifyReport repaired = cache.verify(kjit::Repair::quarantine);
  BOOST_TEST(repaired.quarantined == 1u);
  BOOST_TEST(cache.disk_entries() == 1u);
  BOOST_TEST(cache.entry(good_key).info.key == good_key);  // the rest of the cache is intact
  auto store = kjit::store::Store::open(cache.store_path(), config.store_map_size);
  BOOST_TEST(store->count(kjit::store::Table::blobs) == 0u);
  BOOST_TEST(cache.verify(kjit::Repair::no).bad.empty());

  // Missing rather than damaged: the same, by name (a new Cache: this one still has it in memory).
  kjit::Cache fresh(config);
  const auto again = stored(fresh, damaged_program);
  BOOST_TEST(fresh.stats().compiles == 1u);
  store->erase(kjit::store::Table::blobs, {raw(blob)});
  try {
    fresh.entry(again.key());
    BOOST_FAIL("a missing blob was read");
  } catch (const kjit::StoreError& e) {
    BOOST_TEST(std::string(e.what()).find("missing") != std::string::npos, e.what());
  }
  BOOST_TEST(fresh.verify(kjit::Repair::quarantine).quarantined == 1u);
  BOOST_TEST(store->count(kjit::store::Table::blob_refs) == 0u);
}

BOOST_AUTO_TEST_CASE(blob_encoding_rejects_every_flipped_byte_and_truncation)
{
  const std::string content = shared_header();
  const kjit::util::Sha256 hash = kjit::util::sha256(content);
  const std::string blob = kjit::store::encode_blob(content);
  BOOST_TEST(blob.size() < content.size() / 2);  // compressed
  std::string why;
  BOOST_TEST(kjit::store::decode_blob(blob, hash, why).value_or("") == content, why);
  BOOST_TEST(!kjit::store::decode_blob(blob, kjit::util::sha256("other"), why).has_value());
  for (std::size_t at = 0; at < blob.size(); at += 7) {
    std::string damaged = blob;
    damaged[at] = static_cast<char>(damaged[at] ^ 0x04);
    BOOST_TEST(!kjit::store::decode_blob(damaged, hash, why).has_value(), at);
    BOOST_TEST(!kjit::store::decode_blob(std::string_view(blob).substr(0, at), hash, why).has_value(), at);
  }
}

// Issue 12: PTX, sources, headers and logs are stored zstd-compressed. (Format 6: the record of
// a program found by its raw inputs — no "include" anywhere — also keeps those inputs plain, the
// copy its direct row is checked against; these programs have an -I folder, so they are not.)
BOOST_AUTO_TEST_CASE(text_fields_are_stored_compressed)
{
  kjit::Program program = small_program("packed");
  program.options.push_back("-I" + tmp.path());
  for (int i = 0; i < 100; ++i) {
    program.source += "// a comment line that makes the source about four KiB long, like saxpy " + std::to_string(i) + "\n";
  }
  kjit::Cache cache(config);
  const auto prepared = cache.prepare(program, k_sm90);
  const auto binary = cache.get(prepared);
  auto store = kjit::store::Store::open(cache.store_path(), config.store_map_size);
  const std::string record = *store->get(kjit::store::Table::entries, raw(prepared.key()));
  BOOST_TEST(record.size() < program.source.size() + binary->ptx.size() + binary->cubin.size() / 2 + 1024);
  BOOST_TEST(record.find("a comment line") == std::string::npos);  // the source is not stored plain
  // Format 5: a PTX below 16 KiB is stored plain (a hit reads it without zstd); a larger one is not.
  BOOST_TEST_REQUIRE(binary->ptx.size() < 16384u);
  BOOST_TEST(record.find(binary->ptx) != std::string::npos);
  kjit::Program big_program = big_ptx_program("packed_big");
  big_program.options.push_back("-I" + tmp.path());
  const auto big = cache.prepare(big_program, k_sm90);
  const auto big_binary = cache.get(big);
  BOOST_TEST_REQUIRE(big_binary->ptx.size() >= 16384u);
  const std::string big_record = *store->get(kjit::store::Table::entries, raw(big.key()));
  BOOST_TEST(big_record.find(big_binary->ptx.substr(0, 64)) == std::string::npos);
  BOOST_TEST(big_record.size() < big_binary->ptx.size());
  const kjit::EntryContents contents = cache.entry(prepared.key());
  BOOST_TEST(contents.source == program.source);
  BOOST_TEST(contents.binary.ptx == binary->ptx);
}

// A compressed field whose frame is cut short, in a record whose checksums were made to match:
// refused with a reason, quarantined, compiled again; never a wrong hit.
BOOST_AUTO_TEST_CASE(a_truncated_compressed_field_is_refused_and_the_entry_recompiled)
{
  const kjit::Program program = big_ptx_program("truncated");  // a PTX stored compressed
  std::string key;
  std::string ptx;
  {
    kjit::Cache cache(config);
    const auto prepared = cache.prepare(program, k_sm90);
    ptx = cache.get(prepared)->ptx;
    key = raw(prepared.key());
    auto store = kjit::store::Store::open(cache.store_path(), config.store_map_size);
    const std::string record = *store->get(kjit::store::Table::entries, key);
    const std::string forged = truncate_compressed_field(record, 9 /* PTX */, 5);
    std::string why;
    BOOST_TEST(!kjit::store::decode_record(forged, kjit::util::digest_of_bytes(key), kjit::store::Sections::artifacts, why));
    BOOST_TEST(why.find("truncated or damaged") != std::string::npos, why);
    store->put(kjit::store::Table::entries, key, forged);
    // The inputs too: program.txt (tag 2) cut short is found by a full decode.
    const std::string inputs = truncate_compressed_field(record, 2 /* program.txt */, 3);
    BOOST_TEST(!kjit::store::decode_record(inputs, kjit::util::digest_of_bytes(key), kjit::store::Sections::all, why));
    BOOST_TEST(why.find("field 2") != std::string::npos, why);
  }
  kjit::Cache cache(config);
  BOOST_TEST(cache.get(program, k_sm90)->ptx == ptx);
  BOOST_TEST(cache.stats().quarantined == 1u);
  BOOST_TEST(cache.stats().compiles == 1u);
}

// Issue 12: programs/index.txt lists every entry (key, arch, date, name) and follows removals.
BOOST_AUTO_TEST_CASE(the_mirror_index_lists_entries_and_follows_removals)
{
  std::string first;
  std::string second;
  {
    kjit::Cache cache(config);
    first = cache.prepare(small_program("listed"), k_sm90).key();
    second = cache.prepare(small_program("removed"), k_sm90).key();
    cache.get(small_program("listed"), k_sm90);
    cache.get(small_program("removed"), k_sm90);
  }  // the destructor writes what was queued
  const std::string index = config.cache_dir + "/programs/index.txt";
  std::string text = read_text(index);
  BOOST_TEST(text.find(first + "  sm_90  ") != std::string::npos, text);
  BOOST_TEST(text.find(" UTC  small_listed.cu\n") != std::string::npos, text);
  BOOST_TEST(text.find(second) != std::string::npos, text);
  BOOST_TEST(exists(config.cache_dir + "/programs/" + second + "/module/kernel.ptx"));

  kjit::Cache cache(config);
  auto store = kjit::store::Store::open(cache.store_path(), config.store_map_size);
  store->erase(kjit::store::Table::entries, {raw(second)});
  BOOST_TEST(cache.prune_to_size(~std::size_t(0)) == 0u);
  BOOST_TEST(cache.rebuild_mirror() == 1u);
  text = read_text(index);
  BOOST_TEST(text.find(first) != std::string::npos, text);
  BOOST_TEST(text.find(second) == std::string::npos, text);
  BOOST_TEST(!exists(config.cache_dir + "/programs/" + second));
  // Pruning through the Cache rewrites the index on the writer's thread.
  BOOST_TEST(cache.prune_older_than(-10) == 1u);
  cache.flush_mirror();
  text = read_text(index);
  BOOST_TEST(text.find(first) == std::string::npos, text);
  BOOST_TEST(text.rfind("# kjit cache index", 0) == 0u, text);
  BOOST_TEST(!exists(config.cache_dir + "/programs/" + first));
}

// A shared header file deleted from the mirror is written again by the next entry that uses it
// and by a rebuild; an entry's dangling link never stays.
BOOST_AUTO_TEST_CASE(a_missing_shared_header_in_the_mirror_is_written_again)
{
  const std::string header = shared_header();
  const std::string shared = config.cache_dir + "/programs/headers/" + kjit::util::to_hex(kjit::util::sha256(header));
  kjit::Cache cache(config);
  const auto first = stored(cache, with_header("first", header));
  cache.flush_mirror();
  BOOST_TEST_REQUIRE(::unlink(shared.c_str()) == 0);
  stored(cache, with_header("second", header));
  cache.flush_mirror();
  BOOST_TEST(read_text(shared) == header);
  ::unlink(shared.c_str());
  write_text(shared, "scribbled");
  cache.get(with_header("third", header), k_sm90);
  cache.flush_mirror();
  BOOST_TEST(read_text(shared) == header);  // wrong content is replaced too
  BOOST_TEST_REQUIRE(::unlink(shared.c_str()) == 0);
  BOOST_TEST(cache.rebuild_mirror() == 3u);
  BOOST_TEST(read_text(config.cache_dir + "/programs/" + first.key() + "/module/headers/lib/shared.h") == header);
  BOOST_TEST(cache.stats().mirror_errors == 0u);
}

// A shared header edited in place, its size kept (an editor that keeps hard links writes into the
// file), is not taken for the content it was written with: the next entry that uses it writes it
// again. (The link of a file as it was written is taken on one stat: its size and the time kjit
// gave it, which the edit changed.)
BOOST_AUTO_TEST_CASE(a_shared_header_edited_in_place_is_written_again)
{
  const std::string header = shared_header();
  const std::string shared = config.cache_dir + "/programs/headers/" + kjit::util::to_hex(kjit::util::sha256(header));
  kjit::Cache cache(config);
  stored(cache, with_header("in_place_a", header));
  cache.flush_mirror();
  BOOST_TEST_REQUIRE(read_text(shared) == header);
  {
    std::string edited = header;
    edited[0] = edited[0] == 'x' ? 'y' : 'x';
    const int fd = ::open(shared.c_str(), O_WRONLY);
    BOOST_TEST_REQUIRE(fd >= 0);
    BOOST_TEST_REQUIRE(::pwrite(fd, edited.data(), edited.size(), 0) == static_cast<ssize_t>(edited.size()));
    ::close(fd);
  }
  const auto second = stored(cache, with_header("in_place_b", header));
  cache.flush_mirror();
  BOOST_TEST(read_text(shared) == header);
  BOOST_TEST(read_text(config.cache_dir + "/programs/" + second.key() + "/module/headers/lib/shared.h") == header);
  BOOST_TEST(cache.stats().mirror_errors == 0u);
}

// kjit verify beside another process that removes entries (prune, eviction, clear): an entry the
// walk of the records had read, removed with its header blob before the blobs were looked at, was
// reported damaged ("the content of a header ... is missing from the store"), so kjit verify
// exited 1 on a sound store (and --repair counted it moved aside). The window is narrow (30 rounds
// of verify beside prune --max-size met none); here the other process prunes while the walk's read
// transaction is still open (its progress call for the last record), which opens it every time.
BOOST_AUTO_TEST_CASE(an_entry_another_process_removes_during_verify_is_not_damaged)
{
  const std::string header = shared_header();
  kjit::Cache cache(config);
  stored(cache, with_header("removed", header));
  stored(cache, small_program("no_headers"));
  bool pruned = false;
  const auto prune_elsewhere = [&](std::size_t done, std::size_t total) {
    if (done != total || pruned) {
      return;
    }
    pruned = true;
    const pid_t child = ::fork();
    if (child == 0) {
      int code = 1;
      try {
        kjit::Cache other(config);  // another process's cache, as kjit prune opens it
        code = other.prune_to_size(0) >= 1 ? 0 : 1;
      } catch (...) {
        code = 2;
      }
      ::_exit(code);
    }
    int status = -1;
    BOOST_TEST_REQUIRE(::waitpid(child, &status, 0) == child);
    BOOST_TEST_REQUIRE((WIFEXITED(status) && WEXITSTATUS(status) == 0), "the other process's prune failed: " << status);
  };
  const kjit::VerifyReport report = cache.verify(kjit::Repair::no, prune_elsewhere);
  BOOST_TEST(pruned);
  BOOST_TEST(report.checked == 2u);
  BOOST_TEST(report.bad.empty(), report.bad.size() << " reported damaged: " << (report.bad.empty() ? "" : report.bad[0].second));
  pruned = false;
  kjit::Cache again(config);  // (this process's memory tier still holds the entry: no write)
  stored(again, with_header("removed", header));
  const kjit::VerifyReport repaired = again.verify(kjit::Repair::quarantine, prune_elsewhere);
  BOOST_TEST(pruned);
  BOOST_TEST(repaired.bad.empty());
  BOOST_TEST(repaired.quarantined == 0u);
}

// A format-3 record (headers inside it) left in a store: refused by name, listed as an orphan and
// removed without touching the blobs of the format-4 entries around it.
BOOST_AUTO_TEST_CASE(an_older_format_record_is_an_orphan_and_its_removal_keeps_other_blobs)
{
  const std::string header = shared_header();
  kjit::Cache cache(config);
  const auto current = stored(cache, with_header("current", header));
  const char* root = std::getenv("KJIT_SOURCE_ROOT");
  const std::string old = read_text(std::string(root != nullptr ? root : ".") + "/tests/unit/records/record-v3-binary.bin");
  BOOST_TEST_REQUIRE(!old.empty());
  const std::string old_key = raw(kjit::util::to_hex(kjit::util::sha256("reference")));
  auto store = kjit::store::Store::open(cache.store_path(), config.store_map_size);
  store->put(kjit::store::Table::entries, old_key, old);
  const kjit::VerifyReport report = cache.verify(kjit::Repair::no);
  BOOST_TEST_REQUIRE(report.bad.size() == 1u);
  BOOST_TEST(report.bad[0].second == "record format 3, expected " + std::to_string(kjit::store::k_record_format));
  const std::vector<std::string> orphans = cache.orphans();
  BOOST_TEST((std::find(orphans.begin(), orphans.end(), kjit::util::to_hex(kjit::util::sha256("reference"))) !=
              orphans.end()));
  BOOST_TEST(cache.remove_orphans() >= 1u);
  BOOST_TEST(!store->get(kjit::store::Table::entries, old_key).has_value());
  BOOST_TEST(store->count(kjit::store::Table::blobs) == 1u);
  BOOST_TEST(cache.entry(current.key()).headers.at("lib/shared.h") == header);
}

// A compile hands the record, the blob rows and the mirror the hashes its resolver made
// (HeaderRefs with the contents): the rows are those of hashing the contents again; a ref whose
// size is not its content's is not taken.
BOOST_AUTO_TEST_CASE(header_hashes_given_with_the_contents_write_what_hashing_them_writes)
{
  kjit::store::Entry plain;
  plain.program_name = "k.cu";
  plain.headers = {{"a/x.h", "#define X 1\n"}, {"b/y.h", std::string(100000, 'y')}};
  kjit::store::Entry given = plain;
  for (const auto& [name, content] : plain.headers) {
    given.header_refs.push_back({name, kjit::util::sha256(content), content.size()});
  }
  const kjit::util::Sha256 key = kjit::util::sha256("key");
  BOOST_TEST(kjit::store::encode_record(given, key) == kjit::store::encode_record(plain, key));
  std::vector<kjit::store::Store::Row> from_given;
  std::vector<kjit::store::Store::Row> from_plain;
  kjit::store::add_header_rows(given, key, from_given);
  kjit::store::add_header_rows(plain, key, from_plain);
  BOOST_TEST_REQUIRE(from_given.size() == from_plain.size());
  for (std::size_t i = 0; i < from_given.size(); ++i) {
    BOOST_TEST(from_given[i].key == from_plain[i].key);
  }
  kjit::store::Entry wrong = plain;
  wrong.header_refs.push_back({"a/x.h", kjit::util::sha256("other"), 5});
  BOOST_TEST(kjit::store::encode_record(wrong, key) == kjit::store::encode_record(plain, key));
}

BOOST_AUTO_TEST_CASE(a_row_that_requires_a_blob_stores_it_again_from_its_file_or_stores_nothing)
{
  // A compile that let a header's text go (its blob was in the store) stores its entry with a
  // `present` row naming the header's file: a blob pruned or evicted meanwhile is stored again from
  // that file while it hashes to the blob's key; when it no longer does, nothing is stored (the
  // entry would name a content the store lacks).
  { kjit::Cache cache(config); }  // the store
  auto store = kjit::store::Store::open(config.cache_dir + "/store", config.store_map_size);
  const std::string content = "#define KEPT 1\n";
  const std::string file = tmp.path() + "/kept.h";
  write_text(file, content);
  const kjit::util::Sha256 hash = kjit::util::sha256(content);
  const std::vector<kjit::store::Store::Row> rows{
    {kjit::store::Table::blobs, kjit::store::blob_key(hash), file, false, true},
    {kjit::store::Table::meta, "present-row-test", "stored"},
  };
  const auto stored = [&](const std::string& key) {
    return store->visit(kjit::store::Table::meta, key, [](std::string_view) {});
  };
  store->put(rows);  // the blob was not there: stored from the file
  BOOST_TEST(stored("present-row-test"));
  std::string blob;
  BOOST_TEST(store->visit(kjit::store::Table::blobs, kjit::store::blob_key(hash), [&](std::string_view bytes) {
    std::string why;
    blob = kjit::store::decode_blob(bytes, hash, why).value_or("damaged: " + why);
  }));
  BOOST_TEST(blob == content);
  std::vector<kjit::store::Store::Row> edited = rows;
  edited[0].key = kjit::store::blob_key(kjit::util::sha256("#define GONE 2\n"));  // the file holds another content
  edited[1].key = "present-row-test-2";
  try {
    store->put(edited);
    BOOST_FAIL("a present row whose blob and file content are gone was stored");
  } catch (const kjit::StoreError& e) {
    BOOST_TEST(std::string(e.what()).find(file) != std::string::npos, e.what());
  }
  BOOST_TEST(!stored("present-row-test-2"));
}

// Found by a review of bfccdf4: a count row whose value does not read as a count (here cut to 4
// bytes, as damage would leave it) read as 0 users: removing one of the three entries that use the
// blob deleted it, and the two others lost their header. Now such a blob is kept until a sweep.
BOOST_AUTO_TEST_CASE(a_damaged_count_row_keeps_its_blob_until_a_sweep_counts_again)
{
  const std::string header = shared_header();
  const std::vector<std::string> keys = stored_keys(config, header, {"dmg1", "dmg2", "dmg3"});
  const std::string blob = kjit::store::blob_key(kjit::util::sha256(header));
  plant_raw(config.cache_dir + "/store", "blob_refs", blob, std::string("\x03\x00\x00\x00", 4));
  {
    auto store = kjit::store::Store::open(config.cache_dir + "/store", config.store_map_size);
    store->erase(kjit::store::Table::entries, {keys[0]});
    BOOST_TEST(store->count(kjit::store::Table::entries) == 2u);
    BOOST_TEST(store->count(kjit::store::Table::blobs) == 1u, "blobs left: " << store->count(kjit::store::Table::blobs));
  }
  kjit::Cache cache(config);
  const kjit::VerifyReport report = cache.verify(kjit::Repair::no);
  BOOST_TEST(report.bad.empty(), "verify finds " << report.bad.size() << " bad entries, first: "
                                                 << (report.bad.empty() ? std::string() : report.bad[0].second));
  auto store = kjit::store::Store::open(config.cache_dir + "/store", config.store_map_size);
  BOOST_TEST(store->sweep_blobs().refs_added == 1u);  // counted again: the two entries left
  BOOST_TEST(users_of(*store, header) == 2u);
  store->erase(kjit::store::Table::entries, {keys[1], keys[2]});
  BOOST_TEST(store->count(kjit::store::Table::blobs) == 0u);
}

// An entry quarantined by a lookup (its artifacts damaged, its inputs
// intact) and compiled again is counted once; the count then reaches 0 with its last user.
BOOST_AUTO_TEST_CASE(an_entry_quarantined_and_stored_again_is_counted_once)
{
  const std::string header = shared_header();
  const kjit::Program first = with_header("requar1", header);
  std::vector<std::string> keys;
  {
    kjit::Cache cache(config);
    keys.push_back(raw(stored(cache, first).key()));
    keys.push_back(raw(stored(cache, with_header("requar2", header)).key()));
  }
  std::string record;
  {
    auto store = kjit::store::Store::open(config.cache_dir + "/store", config.store_map_size);
    BOOST_TEST(users_of(*store, header) == 2u);
    record = *store->get(kjit::store::Table::entries, keys[0]);
  }
  const std::uint64_t artifacts = kjit::util::get_int<std::uint64_t>(record, 16);
  record[64 + artifacts / 2] ^= 0x5a;  // the artifacts' checksum no longer matches
  plant_raw(config.cache_dir + "/store", "entries", keys[0], record);
  {
    kjit::Cache cache(config);
    cache.get(first, k_sm90);
    BOOST_TEST(cache.stats().quarantined == 1u);
    BOOST_TEST(cache.stats().compiles == 1u);
  }
  auto store = kjit::store::Store::open(config.cache_dir + "/store", config.store_map_size);
  BOOST_TEST(store->count(kjit::store::Table::entries) == 2u);
  BOOST_TEST(users_of(*store, header) == 2u);
  store->erase(kjit::store::Table::entries, {keys[0], keys[1]});
  BOOST_TEST(store->count(kjit::store::Table::blobs) == 0u);
  BOOST_TEST(store->count(kjit::store::Table::blob_refs) == 0u);
}

// Entries imported from a bundle are counted once each (again: none),
// beside an entry of the store; a prune by size and Cache::clear leave counts that match.
BOOST_AUTO_TEST_CASE(imported_pruned_and_cleared_entries_are_counted)
{
  const std::string header = shared_header();
  kjit::Config other = config;
  other.cache_dir = tmp.path() + "/other-cache";
  {
    kjit::Cache source(other);
    stored(source, with_header("imp1", header));
    stored(source, with_header("imp2", header));
    BOOST_TEST(source.export_bundle(tmp.path() + "/b.kjitpack", {}).entries == 2u);
  }
  kjit::Cache cache(config);
  stored(cache, with_header("imp3", header));
  BOOST_TEST(cache.import_bundle(tmp.path() + "/b.kjitpack").entries == 2u);
  BOOST_TEST(cache.import_bundle(tmp.path() + "/b.kjitpack").already_present == 2u);
  {
    auto store = kjit::store::Store::open(config.cache_dir + "/store", config.store_map_size);
    BOOST_TEST(users_of(*store, header) == 3u);
  }
  cache.prune_to_size(1);  // removes all
  {
    auto store = kjit::store::Store::open(config.cache_dir + "/store", config.store_map_size);
    BOOST_TEST(store->count(kjit::store::Table::entries) == 0u);
    BOOST_TEST(store->count(kjit::store::Table::blobs) == 0u);
    BOOST_TEST(store->count(kjit::store::Table::blob_refs) == 0u);
  }
  BOOST_TEST(cache.import_bundle(tmp.path() + "/b.kjitpack").entries == 2u);
  cache.clear();
  stored(cache, with_header("imp4", header));
  auto store = kjit::store::Store::open(config.cache_dir + "/store", config.store_map_size);
  BOOST_TEST(users_of(*store, header) == 1u);
  BOOST_TEST(cache.verify(kjit::Repair::no).bad.empty());
}

// A write whose `present` row fails (blob and file gone) counts nothing.
BOOST_AUTO_TEST_CASE(a_failed_write_counts_nothing)
{
  const std::string header = shared_header();
  std::string key;
  {
    kjit::Cache cache(config);
    key = raw(stored(cache, with_header("fail1", header)).key());
  }
  auto store = kjit::store::Store::open(config.cache_dir + "/store", config.store_map_size);
  const kjit::util::Sha256 hash = kjit::util::sha256(header);
  const kjit::util::Sha256 gone = kjit::util::sha256(std::string("no such content"));
  std::string other_key = key;
  other_key[0] ^= 1;
  const std::string record = *store->get(kjit::store::Table::entries, key);
  try {
    store->put({{kjit::store::Table::blob_refs, kjit::store::blob_ref_key(hash, other_key), "1"},
                {kjit::store::Table::blob_refs, kjit::store::blob_ref_key(gone, other_key), "1"},
                {kjit::store::Table::blobs, kjit::store::blob_key(gone), "/nonexistent/x.h", false, true},
                {kjit::store::Table::entries, other_key, record}});
    BOOST_FAIL("stored");
  } catch (const kjit::StoreError&) {
  }
  BOOST_TEST(users_of(*store, header) == 1u);
  BOOST_TEST(!store->get(kjit::store::Table::blob_refs, kjit::store::blob_key(gone)));
  BOOST_TEST(store->count(kjit::store::Table::entries) == 1u);
}

BOOST_AUTO_TEST_SUITE_END()
