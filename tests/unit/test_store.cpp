// The LMDB store and its records: damage is detected and quarantined, the map grows.
#include <boost/test/unit_test.hpp>

#include "fixture.hpp"
#include "write_lock.hpp"

#include "store/location.hpp"
#include "store/record.hpp"
#include "store/store.hpp"
#include "util/hash.hpp"
#include "util/unique_handle.hpp"

#include <algorithm>
#include <cstdio>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace kjit::test;

namespace {

// Compiles one program into a fresh cache, damages its record with `damage`, and checks a new
// cache detects it, quarantines it, recompiles, and then serves the repaired entry.
void check_damage_is_repaired(const kjit::Config& config,
                              const std::function<void(std::string& bytes, const std::string& key)>& damage)
{
  const kjit::Program program = small_program("damage");
  std::string good_cubin;
  std::string key;
  {
    kjit::Cache cache(config);
    const auto prepared = cache.prepare(program, kjit::Arch::parse("sm_90"));
    good_cubin = cache.get(prepared)->cubin;
    key = raw_key(prepared);
    auto store = kjit::store::Store::open(cache.store_path(), config.store_map_size);
    auto bytes = store->get(kjit::store::Table::entries, key);
    BOOST_TEST_REQUIRE(bytes.has_value());
    damage(*bytes, key);
    store->put(kjit::store::Table::entries, key, *bytes);
  }
  kjit::Cache cache(config);
  const auto binary = cache.get(program, kjit::Arch::parse("sm_90"));
  BOOST_TEST(binary->cubin == good_cubin);
  BOOST_TEST(cache.stats().quarantined == 1u);
  BOOST_TEST(cache.stats().compiles == 1u);
  auto store = kjit::store::Store::open(cache.store_path(), config.store_map_size);
  BOOST_TEST(store->count(kjit::store::Table::quarantine) == 1u);

  kjit::Cache after(config);
  BOOST_TEST(after.get(program, kjit::Arch::parse("sm_90"))->cubin == good_cubin);
  BOOST_TEST(after.stats().disk_hits == 1u);
  BOOST_TEST(after.stats().quarantined == 0u);
}

kjit::store::Entry sample_entry()
{
  kjit::store::Entry entry;
  entry.program_name = "k.cu";
  entry.program_txt = "kjit-program 1\nname: k.cu\nsource-bytes: 22\nsource:\n__global__ void k() {}\n";
  entry.options_txt = "options";
  entry.source = "__global__ void k() {}";
  entry.headers = {{"a.h", "A"}, {"b/c.h", "C"}};
  entry.options = {"-DX", "-arch=compute_90"};
  entry.binary = kjit::compile({"k.cu", entry.source, {}, {}, {"k"}}, kjit::Arch::parse("sm_90"));
  entry.created_unix = 1700000000;
  return entry;
}

// A fixed entry (no NVRTC output in it) whose encoding is kept under tests/unit/records/.
kjit::store::Entry reference_entry(kjit::store::EntryKind kind)
{
  kjit::store::Entry entry;
  entry.kind = kind;
  entry.program_name = "reference.cu";
  entry.program_txt = "kjit-program 1\nname: reference.cu\nsource-bytes: 23\nsource:\n__global__ void r() {}\n\n";
  entry.options_txt = "kjit-options 1\narch: compute_90\n";
  entry.headers = {{"a.h", "#define A 1\n"}};
  entry.options = {"-DX", "-arch=compute_90"};
  entry.binary.arch = "compute_90";
  // Long enough to be stored compressed (format 4): the reference covers the zstd fields too.
  entry.binary.ptx = kind == kjit::store::EntryKind::binary
                       ? ".version 8.0\n.target sm_90\n" + std::string(4, '\n') +
                           "// PTX lines that repeat, as PTX does: ld.global.f32 %f1, [%rd1];\n"
                           "// PTX lines that repeat, as PTX does: ld.global.f32 %f2, [%rd2];\n"
                           "// PTX lines that repeat, as PTX does: ld.global.f32 %f3, [%rd3];\n"
                       : "";
  entry.binary.log = kind == kjit::store::EntryKind::binary ? "" : "reference.cu(1): error: expected a ;";
  entry.binary.lowered_names = {{"r", "_Z1rv"}};
  entry.binary.timings = {1.0, 2.0, 3.0, 6.0};
  entry.created_unix = 1700000000;
  // Format 6: a direct-eligible program's raw inputs, another program's manifest key.
  if (kind == kjit::store::EntryKind::binary) {
    entry.direct_inputs = "kjit-direct 1\n(the raw inputs of reference.cu)";
  } else {
    entry.manifest_key = std::string(32, 'm');
  }
  return entry;
}

std::string reference_path(const std::string& name)
{
  const char* root = std::getenv("KJIT_SOURCE_ROOT");
  return std::string(root != nullptr ? root : ".") + "/tests/unit/records/" + name;
}

// A Store opened through a descriptor of its folder `<root>/again` (as a Cache opens it: the
// folder stays its folder wherever it goes), holding a row, whose folder is then moved to
// `<root>/away` while it stays open: `dir` is free for another store.
struct MovedAway {
  MovedAway(const std::string& root, std::size_t map_size) : dir(root + "/again"), away(root + "/away")
  {
    BOOST_TEST_REQUIRE(::mkdir(dir.c_str(), 0700) == 0);
    fd = kjit::util::UniqueFd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    kjit::store::Store::OpenOptions options;
    options.initial_map_size = map_size;
    options.dir_fd = fd.get();
    held = kjit::store::Store::open(dir, options);
    held->put(kjit::store::Table::meta, "old", "1");
    BOOST_TEST_REQUIRE(::rename(dir.c_str(), away.c_str()) == 0);
  }
  std::string dir;
  std::string away;
  kjit::util::UniqueFd fd;
  std::shared_ptr<kjit::store::Store> held;
};

} // namespace

BOOST_FIXTURE_TEST_SUITE(store, CacheFixture)

// One reference record per format version: the current format must encode the reference entry
// to exactly the stored bytes and decode them back; older formats must be refused by name.
BOOST_AUTO_TEST_CASE(reference_records_of_every_format_version)
{
  const kjit::util::Sha256 key = kjit::util::sha256("reference");
  const std::string current = "record-v" + std::to_string(kjit::store::k_record_format);
  for (const auto kind : {kjit::store::EntryKind::binary, kjit::store::EntryKind::failure}) {
    const std::string name = current + (kind == kjit::store::EntryKind::binary ? "-binary.bin" : "-failure.bin");
    const std::string encoded = kjit::store::encode_record(reference_entry(kind), key);
    if (std::getenv("KJIT_WRITE_REFERENCE_RECORDS") != nullptr) {
      write_text(reference_path(name), encoded);
    }
    const std::string stored = read_text(reference_path(name));
    BOOST_TEST_REQUIRE(!stored.empty(), "missing reference record " << reference_path(name));
    BOOST_TEST((encoded == stored), name << ": the encoding of the reference entry changed; bump k_record_format");
    std::string why;
    const auto decoded = kjit::store::decode_record(stored, key, kjit::store::Sections::all, why);
    BOOST_TEST_REQUIRE(decoded.has_value(), why);
    BOOST_TEST((decoded->kind == kind));
    BOOST_TEST(decoded->binary.ptx == reference_entry(kind).binary.ptx);
    BOOST_TEST(decoded->binary.log == reference_entry(kind).binary.log);
    // Format 6: the fields a direct hit and eviction read without decoding the record.
    BOOST_TEST(decoded->direct_inputs == reference_entry(kind).direct_inputs);
    BOOST_TEST(decoded->manifest_key == reference_entry(kind).manifest_key);
    BOOST_TEST(kjit::store::input_field(stored, kjit::store::InputField::direct_inputs).value_or("") ==
               reference_entry(kind).direct_inputs);
    BOOST_TEST(kjit::store::input_field(stored, kjit::store::InputField::manifest_key).value_or("") ==
               reference_entry(kind).manifest_key);
    // Format 4: the record names each header by hash; the content is a blob (stored once).
    BOOST_TEST_REQUIRE(decoded->header_refs.size() == 1u);
    BOOST_TEST(decoded->header_refs[0].name == "a.h");
    BOOST_TEST((decoded->header_refs[0].hash == kjit::util::sha256("#define A 1\n")));
    BOOST_TEST(decoded->header_refs[0].size == 12u);
    BOOST_TEST(decoded->headers.empty());
  }
  for (std::uint32_t format = 2; format < kjit::store::k_record_format; ++format) {
    const std::string stored = read_text(reference_path("record-v" + std::to_string(format) + "-binary.bin"));
    BOOST_TEST_REQUIRE(!stored.empty(), "missing reference record of format " << format);
    std::string why;
    BOOST_TEST(!kjit::store::decode_record(stored, key, kjit::store::Sections::all, why).has_value());
    BOOST_TEST(why.find("record format " + std::to_string(format)) != std::string::npos, why);
  }
}

BOOST_AUTO_TEST_CASE(records_round_trip)
{
  const kjit::store::Entry entry = sample_entry();
  const kjit::util::Sha256 key = kjit::util::sha256("k");
  const std::string record = kjit::store::encode_record(entry, key);
  std::string why;
  const auto decoded = kjit::store::decode_record(record, key, kjit::store::Sections::all, why);
  BOOST_TEST_REQUIRE(decoded.has_value(), why);
  BOOST_TEST(decoded->program_txt == entry.program_txt);
  BOOST_TEST(decoded->options_txt == entry.options_txt);
  BOOST_TEST(decoded->source == entry.source);  // recovered from program.txt, stored once
  BOOST_TEST(decoded->headers.empty());  // stored as blobs: load_headers() reads them
  BOOST_TEST_REQUIRE(decoded->header_refs.size() == entry.headers.size());
  for (const kjit::store::HeaderRef& ref : decoded->header_refs) {
    BOOST_TEST((ref.hash == kjit::util::sha256(entry.headers.at(ref.name))));
  }
  // Inline (a bundle's self-contained form): the contents come back with the record.
  const std::string whole = kjit::store::encode_record(entry, key, kjit::store::HeaderStorage::inline_content);
  const auto inlined = kjit::store::decode_record(whole, key, kjit::store::Sections::all, why);
  BOOST_TEST_REQUIRE(inlined.has_value(), why);
  BOOST_TEST((inlined->headers == entry.headers));
  BOOST_TEST((inlined->header_refs == decoded->header_refs));
  BOOST_TEST((decoded->options == entry.options));
  BOOST_TEST(decoded->binary.cubin == entry.binary.cubin);
  BOOST_TEST(decoded->binary.ptx == entry.binary.ptx);
  BOOST_TEST((decoded->binary.lowered_names == entry.binary.lowered_names));
  BOOST_TEST(decoded->binary.timings.total_ms == entry.binary.timings.total_ms);
  BOOST_TEST(decoded->created_unix == entry.created_unix);

  // A hit reads the artifacts only.
  const auto artifacts = kjit::store::decode_record(record, key, kjit::store::Sections::artifacts, why);
  BOOST_TEST_REQUIRE(artifacts.has_value(), why);
  BOOST_TEST(artifacts->binary.cubin == entry.binary.cubin);
  BOOST_TEST(artifacts->program_txt.empty());

  // Under another key the record is refused.
  BOOST_TEST(!kjit::store::decode_record(record, kjit::util::sha256("other"), kjit::store::Sections::artifacts, why));
  BOOST_TEST(why == "the record belongs to another key");
}

BOOST_AUTO_TEST_CASE(every_truncation_and_every_flipped_byte_is_rejected)
{
  const kjit::util::Sha256 key = kjit::util::sha256("k");
  const std::string record = kjit::store::encode_record(sample_entry(), key);
  std::string why;
  const std::size_t step = std::max<std::size_t>(1, record.size() / 512);
  for (std::size_t size = 0; size < record.size(); size += step) {
    const std::string_view cut = std::string_view(record).substr(0, size);
    BOOST_TEST(!kjit::store::decode_record(cut, key, kjit::store::Sections::artifacts, why).has_value(), size);
  }
  for (std::size_t at = 0; at < record.size(); at += step) {
    std::string damaged = record;
    damaged[at] = static_cast<char>(damaged[at] ^ 0x20);
    BOOST_TEST(!kjit::store::decode_record(damaged, key, kjit::store::Sections::all, why).has_value(), at);
  }
}

BOOST_AUTO_TEST_CASE(a_corrupted_record_is_quarantined_and_recompiled)
{
  check_damage_is_repaired(config, [](std::string& bytes, const std::string&) { bytes[bytes.size() / 2] ^= 0x5a; });
}

BOOST_AUTO_TEST_CASE(a_truncated_record_is_quarantined_and_recompiled)
{
  check_damage_is_repaired(config, [](std::string& bytes, const std::string&) { bytes.resize(bytes.size() / 3); });
}

BOOST_AUTO_TEST_CASE(a_record_with_a_bad_cubin_and_a_good_checksum_is_caught)
{
  // Valid framing, checksum recomputed, but the cubin is for another SM: the ELF check stops it.
  check_damage_is_repaired(config, [](std::string& bytes, const std::string& raw) {
    std::string why;
    const kjit::util::Sha256 key = kjit::util::digest_of_bytes(raw);
    auto entry = kjit::store::decode_record(bytes, key, kjit::store::Sections::all, why);
    BOOST_TEST_REQUIRE(entry.has_value(), why);
    entry->binary.cubin = kjit::compile(small_program("damage"), kjit::Arch::parse("sm_80")).cubin;
    bytes = kjit::store::encode_record(*entry, key);
  });
}

BOOST_AUTO_TEST_CASE(a_tiny_map_grows_and_keeps_everything)
{
  config.store_map_size = 64 * 1024;
  std::vector<std::string> cubins;
  std::size_t initial_map = 0;
  {
    kjit::Cache cache(config);
    for (int i = 0; i < 40; ++i) {
      cubins.push_back(cache.get(small_program("grow" + std::to_string(i)), kjit::Arch::parse("sm_90"))->cubin);
    }
    initial_map = config.store_map_size;
    BOOST_TEST(cache.disk_entries() == 40u);
  }
  kjit::Cache fresh(config);
  for (int i = 0; i < 40; ++i) {
    BOOST_TEST(fresh.get(small_program("grow" + std::to_string(i)), kjit::Arch::parse("sm_90"))->cubin == cubins[i]);
  }
  BOOST_TEST(fresh.stats().disk_hits == 40u);
  BOOST_TEST(fresh.stats().compiles == 0u);
  auto store = kjit::store::Store::open(fresh.store_path(), config.store_map_size);
  BOOST_TEST(store->map_size() > initial_map);
}

BOOST_AUTO_TEST_CASE(one_environment_per_path_per_process)
{
  kjit::Cache a(config);
  kjit::Cache b(config);
  auto store_a = kjit::store::Store::open(a.store_path(), config.store_map_size);
  auto store_b = kjit::store::Store::open(b.store_path() + "/../store", config.store_map_size);
  BOOST_TEST(store_a.get() == store_b.get());
}

// Store::open names a store given by its descriptor from the descriptor (one readlink, not
// realpath): still the real path, so it is the one environment of that path in the process.
BOOST_AUTO_TEST_CASE(a_store_opened_by_its_descriptor_is_the_one_of_its_real_path)
{
  kjit::Cache cache(config);
  cache.get(small_program("by_descriptor"), kjit::Arch::parse("sm_90"));
  const std::string link = config.cache_dir + "/store-link";
  BOOST_TEST_REQUIRE(::symlink(cache.store_path().c_str(), link.c_str()) == 0);
  kjit::util::UniqueFd fd(::open(link.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  BOOST_TEST_REQUIRE(static_cast<bool>(fd));
  kjit::store::Store::OpenOptions options;
  options.initial_map_size = config.store_map_size;
  options.dir_fd = fd.get();
  auto by_descriptor = kjit::store::Store::open(link, options);
  auto by_path = kjit::store::Store::open(cache.store_path(), config.store_map_size);
  BOOST_TEST(by_descriptor.get() == by_path.get());
  BOOST_TEST(by_descriptor->path() == cache.store_path());
}

// LMDB allows one environment per file per process: a folder renamed while its store is open is
// still that store (keyed by data.mdb's identity, not by the path).
BOOST_AUTO_TEST_CASE(a_renamed_store_folder_is_still_the_one_environment)
{
  const std::string before = tmp.path() + "/before";
  const std::string after = tmp.path() + "/after";
  auto held = kjit::store::Store::open(before, config.store_map_size);
  held->put(kjit::store::Table::meta, "k", "v");
  BOOST_TEST_REQUIRE(::rename(before.c_str(), after.c_str()) == 0);
  auto reopened = kjit::store::Store::open(after, config.store_map_size);
  BOOST_TEST(reopened.get() == held.get());
  BOOST_TEST(reopened->get(kjit::store::Table::meta, "k").value_or("") == "v");
}

// Opened by its new name, the renamed store is that name's: the next write lands there, read back
// through both handles and by another process, and the old name is not made again. Before, the
// write followed the old name (a new empty store there) and neither handle saw the rows any more.
BOOST_AUTO_TEST_CASE(a_renamed_store_opened_by_its_new_name_writes_there)
{
  const std::string before = tmp.path() + "/before";
  const std::string after = tmp.path() + "/after";
  auto held = kjit::store::Store::open(before, config.store_map_size);
  held->put(kjit::store::Table::meta, "k", "v");
  BOOST_TEST_REQUIRE(::rename(before.c_str(), after.c_str()) == 0);
  auto reopened = kjit::store::Store::open(after, config.store_map_size);
  BOOST_TEST_REQUIRE(reopened.get() == held.get());
  BOOST_TEST(held->path() == after);
  held->put(kjit::store::Table::meta, "written", "1");
  reopened->put_later({{kjit::store::Table::meta, "queued", "2"}}, [](const kjit::StoreError*) {});
  for (const auto& store : {held, reopened}) {
    BOOST_TEST(store->get(kjit::store::Table::meta, "k").value_or("") == "v");
    BOOST_TEST(store->get(kjit::store::Table::meta, "written").value_or("") == "1");
    BOOST_TEST(store->get(kjit::store::Table::meta, "queued").value_or("") == "2");
  }
  BOOST_TEST(!exists(before));
  const pid_t child = ::fork();
  BOOST_TEST_REQUIRE(child >= 0);
  if (child == 0) {  // another process (its registry is its own)
    auto store = kjit::store::Store::open(after, config.store_map_size);
    ::_exit(store->get(kjit::store::Table::meta, "written").value_or("") == "1" &&
                store->get(kjit::store::Table::meta, "queued").value_or("") == "2"
              ? 0
              : 1);
  }
  const int status = wait_status(child);
  BOOST_TEST((WIFEXITED(status) && WEXITSTATUS(status) == 0), "status " << status);
}

// A store folder deleted and made again while this process holds its store: an open is the new
// folder's, and the held store's next write goes there too, where other processes see it.
BOOST_AUTO_TEST_CASE(a_store_folder_made_again_is_the_new_folders_store)
{
  const std::string dir = tmp.path() + "/again";
  auto held = kjit::store::Store::open(dir, config.store_map_size);
  held->put(kjit::store::Table::meta, "old", "1");
  std::string output;
  BOOST_TEST_REQUIRE(kjit::test::run("rm -rf '" + dir + "'", output) == 0);
  held->put(kjit::store::Table::meta, "after", "2");  // notices the folder is gone: a fresh one
  auto reopened = kjit::store::Store::open(dir, config.store_map_size);
  BOOST_TEST(reopened.get() == held.get());
  BOOST_TEST(!reopened->get(kjit::store::Table::meta, "old").has_value());
  const pid_t child = ::fork();
  BOOST_TEST_REQUIRE(child >= 0);
  if (child == 0) {  // another process (its registry is its own)
    auto store = kjit::store::Store::open(dir, config.store_map_size);
    ::_exit(store->get(kjit::store::Table::meta, "after").value_or("") == "2" ? 0 : 1);
  }
  const int status = wait_status(child);
  BOOST_TEST((WIFEXITED(status) && WEXITSTATUS(status) == 0));

  BOOST_TEST_REQUIRE(kjit::test::run("rm -rf '" + dir + "'", output) == 0);
  auto fresh = kjit::store::Store::open(dir, config.store_map_size);  // before the held one writes
  BOOST_TEST(fresh.get() != held.get());
  fresh->put(kjit::store::Table::meta, "fresh", "3");
  BOOST_TEST(fresh->get(kjit::store::Table::meta, "fresh").value_or("") == "3");
  // The held store cannot move onto a file another Store of this process has open: its write fails
  // (never lost silently in a deleted file).
  BOOST_CHECK_THROW(held->put(kjit::store::Table::meta, "lost", "4"), kjit::StoreError);
}

// A store found damaged after its folder was moved away and made again, and opened there by
// another Store of this process, is not replaced by the file that other one has open (a second environment
// on it: closing one drops the process's locks on lock.mdb, and another process then takes the
// store as unused and resets its lock file under the first one's readers).
BOOST_AUTO_TEST_CASE(a_damaged_store_is_not_replaced_by_the_file_another_store_has_open)
{
  MovedAway moved(tmp.path(), config.store_map_size);
  const std::string& dir = moved.dir;
  const std::string& away = moved.away;
  auto& held = moved.held;
  auto fresh = kjit::store::Store::open(dir, config.store_map_size);
  fresh->put(kjit::store::Table::meta, "fresh", "2");
  BOOST_TEST_REQUIRE(::truncate((away + "/data.mdb").c_str(), 2 * 4096) == 0);  // the held one's
  BOOST_TEST(!held->check(true).ok);  // damaged: replaced (by the file at its path, before)
  held.reset();  // closes whatever environment it has
  const pid_t child = ::fork();  // LMDB's shared lock on lock.mdb must still be this process's
  BOOST_TEST_REQUIRE(child >= 0);
  if (child == 0) {
    const int lock_fd = ::open((dir + "/lock.mdb").c_str(), O_RDWR);
    struct flock lock {};
    lock.l_type = F_WRLCK;
    lock.l_whence = SEEK_SET;
    lock.l_len = 1;
    ::_exit(lock_fd >= 0 && ::fcntl(lock_fd, F_SETLK, &lock) != 0 ? 0 : 7);
  }
  const int status = wait_status(child);
  BOOST_TEST((WIFEXITED(status) && WEXITSTATUS(status) == 0), "status " << status);
  BOOST_TEST(fresh->get(kjit::store::Table::meta, "fresh").value_or("") == "2");
}

// A store found damaged while another Store of this process, on the file now at its folder, is
// being closed (the close waits for a commit, which waits for the write lock another process holds
// for as long as it likes): the recovery ends at once (that file is not opened a second time: the
// damaged store is retired). Before, it waited for that close holding the store's guard: every call
// of the store waited too, and an open() of any store meanwhile (which asks each store for its
// file, under the registry's mutex) deadlocked with it.
BOOST_AUTO_TEST_CASE(recovering_a_store_does_not_wait_for_the_close_of_another)
{
  MovedAway moved(tmp.path(), config.store_map_size);
  const std::string& dir = moved.dir;
  const std::string& away = moved.away;
  auto& held = moved.held;
  auto closing = kjit::store::Store::open(dir, config.store_map_size);
  closing->put(kjit::store::Table::meta, "made", "1");
  WriteLockHolder holder(dir, config.store_map_size, 60);
  closing->put_later({{kjit::store::Table::meta, "queued", "1"}}, [](const kjit::StoreError*) {});
  const std::weak_ptr<kjit::store::Store> watched = closing;
  std::thread closer([store = std::move(closing)]() mutable { store.reset(); });  // waits for the commit
  while (!watched.expired()) {
    std::this_thread::yield();  // (the closer has begun the close)
  }
  BOOST_TEST_REQUIRE(::truncate((away + "/data.mdb").c_str(), 2 * 4096) == 0);  // the held one's
  BOOST_TEST(!held->check(true).ok);
  BOOST_TEST(holder.holding());  // recovered at once, not once the other process let go
  BOOST_TEST(!held->get(kjit::store::Table::meta, "made"));  // not a second environment on that file
  holder.release();
  closer.join();
  BOOST_TEST(kjit::store::Store::open(dir, config.store_map_size)->get(kjit::store::Table::meta, "queued").value_or("") == "1");
}

// A Store being destroyed waits for its queued commits, which wait for its write lock, held by
// another process for as long as it likes. An open() of another store does not wait for that
// close: it waited for every close in progress (the registry could not tell whose file it was).
BOOST_AUTO_TEST_CASE(opening_a_store_does_not_wait_for_the_close_of_another)
{
  const std::string closing_dir = tmp.path() + "/closing";
  const std::string other_dir = tmp.path() + "/other";
  kjit::store::Store::open(other_dir, config.store_map_size)->put(kjit::store::Table::meta, "made", "1");
  auto closing = kjit::store::Store::open(closing_dir, config.store_map_size);
  closing->put(kjit::store::Table::meta, "made", "1");
  WriteLockHolder holder(closing_dir, config.store_map_size, 60);
  closing->put_later({{kjit::store::Table::meta, "queued", "1"}}, [](const kjit::StoreError*) {});
  const std::weak_ptr<kjit::store::Store> watched = closing;
  std::thread closer([store = std::move(closing)]() mutable { store.reset(); });  // waits for the commit
  while (!watched.expired()) {
    std::this_thread::yield();  // (the closer has begun the close)
  }
  auto other = kjit::store::Store::open(other_dir, config.store_map_size);
  BOOST_TEST(holder.holding());  // opened at once, not once the other process let go
  BOOST_TEST(other->get(kjit::store::Table::meta, "made").value_or("") == "1");
  holder.release();
  closer.join();
  BOOST_TEST(kjit::store::Store::open(closing_dir, config.store_map_size)->get(kjit::store::Table::meta, "queued").value_or("") == "1");
}

// A child forked while a thread of its parent follows a store's folder (the store's guard held
// unique, here for as long as another process holds lock.mdb's lock, as one opening that store
// does): the child's calls of that store end (refused), instead of waiting for ever on the copy of
// a lock no thread of the child holds.
BOOST_AUTO_TEST_CASE(a_child_forked_while_its_parent_follows_the_folder_does_not_hang)
{
  const std::string dir = tmp.path() + "/followed";
  auto store = kjit::store::Store::open(dir, config.store_map_size);
  store->put(kjit::store::Table::meta, "made", "1");
  std::string output;
  BOOST_TEST_REQUIRE(run("rm -rf '" + dir + "' && mkdir '" + dir + "'", output) == 0);
  FirstOpenHolder holder(dir);
  std::thread writer([&] {
    try {
      store->put(kjit::store::Table::meta, "after", "1");  // follows the folder: waits in its open
    } catch (const kjit::StoreError&) {
    }
  });
  // Until the writer waits for that lock (a blocked request on lock.mdb's inode in /proc/locks).
  while (!lock_request_waits(holder.inode())) {
    std::this_thread::yield();
  }
  const pid_t child = ::fork();
  BOOST_TEST_REQUIRE(child >= 0);
  if (child == 0) {
    ::alarm(60);  // a hang ends as SIGALRM
    try {
      std::ignore = store->get(kjit::store::Table::meta, "made");
    } catch (const kjit::StoreError&) {
    }
    std::ignore = store->replacements();
    ::_exit(0);
  }
  const int status = wait_status(child);
  holder.release();
  writer.join();
  BOOST_TEST(WIFEXITED(status), "status " << status);
}

BOOST_AUTO_TEST_CASE(network_filesystems_are_detected_and_avoided)
{
  for (long magic : {0x6969L, 0xFF534D42L, 0x0BD00BD0L, 0x47504653L, 0x00C36400L}) {
    BOOST_TEST(kjit::store::is_network_magic(magic), magic);
  }
  for (long magic : {0xEF53L /* ext4 */, 0x58465342L /* xfs */, 0x01021994L /* tmpfs */}) {
    BOOST_TEST(!kjit::store::is_network_magic(magic), magic);
  }
  std::string fs;
  BOOST_TEST(!kjit::store::on_network_filesystem(tmp.path(), fs));
  BOOST_TEST(kjit::store::store_dir_for("/home/u/.cache/kjit", false) == "/home/u/.cache/kjit/store");
  const std::string node_local = kjit::store::store_dir_for("/nfs/u/.cache/kjit", true);
  BOOST_TEST(node_local.rfind("/nfs/", 0) != 0u);
  BOOST_TEST(node_local.find("/store-") != std::string::npos);
  BOOST_TEST(node_local != kjit::store::store_dir_for("/nfs/v/.cache/kjit", true));
}

// A `meta` row marked `added` adds its number to the number the stored value starts with, in the
// writer's own commit (the store's count for KJIT_MAX_SIZE, kept by every process's writes); a row
// that is not there, or starts with no number, is left as it is.
BOOST_AUTO_TEST_CASE(an_added_row_adds_to_the_number_a_value_starts_with)
{
  auto store = kjit::store::Store::open(tmp.path() + "/added", config.store_map_size);
  const auto added = [](const std::string& key, const std::string& number) {
    kjit::store::Store::Row row{kjit::store::Table::meta, key, number};
    row.added = true;
    return row;
  };
  store->put({{kjit::store::Table::meta, "count", "100 at noon"}, {kjit::store::Table::meta, "words", "many"}});
  store->put({added("count", "23"), added("words", "5"), added("absent", "7")});
  store->put({added("count", "1")});
  BOOST_TEST(store->get(kjit::store::Table::meta, "count").value_or("") == "124 at noon");
  BOOST_TEST(store->get(kjit::store::Table::meta, "words").value_or("") == "many");
  BOOST_TEST(!store->get(kjit::store::Table::meta, "absent").has_value());
  store->put({added("count", "18446744073709551615")});  // (saturates)
  BOOST_TEST(store->get(kjit::store::Table::meta, "count").value_or("") == "18446744073709551615 at noon");
}

// visit_each() visits the keys that are there, each told by its index, in one read transaction.
BOOST_AUTO_TEST_CASE(visit_each_visits_the_keys_that_are_there)
{
  auto store = kjit::store::Store::open(tmp.path() + "/each", config.store_map_size);
  store->put({{kjit::store::Table::names, "a", "1"}, {kjit::store::Table::names, "c", "3"}});
  std::vector<std::string> seen(4);
  store->visit_each(kjit::store::Table::names, {"a", "b", "c", "a"},
                    [&](std::size_t i, std::string_view value) { seen.at(i) = std::string(value); });
  BOOST_TEST(seen == (std::vector<std::string>{"1", "", "3", "1"}));
}

BOOST_AUTO_TEST_SUITE_END()
