// Bundles: export/import between caches, bundles as a read-only tier, damaged and truncated files.
#include <boost/test/unit_test.hpp>

#include "fixture.hpp"
#include "script_samples.hpp"
#include "write_lock.hpp"

#include "bundle/reader.hpp"
#include "cache/cache_impl.hpp"
#include "bundle/writer.hpp"
#include "store/script_store.hpp"
#include "store/record.hpp"
#include "util/bytes.hpp"
#include "util/hash.hpp"
#include "store/store.hpp"

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <sys/resource.h>
#include <unistd.h>
#include <zstd.h>


using namespace kjit::test;

namespace {

const char* const k_archs[] = {"sm_80", "sm_90", "compute_90"};

std::string probe(const std::string& cache_dir, const std::string& file, const std::string& arch,
                  const std::string& env = "")
{
  std::string output;
  run(env + " '" + helper("KJIT_TEST_CACHE_PROBE") + "' '" + cache_dir + "' '" + file + "' " + arch + " 2>&1", output);
  return output;
}

bool has_line(const std::string& output, const std::string& line)
{
  return ("\n" + output).find("\n" + line + "\n") != std::string::npos;
}

// Warms `config`'s cache with the program in `file` for the three archs, each in a fresh process
// (as a build machine would; this process's toolchain memo would leave the store's own record of
// the toolchain unwritten); returns the file.
std::string warm_three_archs(const kjit::Config& config, const std::string& dir)
{
  const std::string file = dir + "/bundled.cu";
  write_text(file, small_program("bundled").source);
  for (const char* arch : k_archs) {
    const std::string out = probe(config.cache_dir, file, arch);
    // compute_90 is the PTX of the sm_90 entry just made: no compile (docs/compile-paths.md).
    BOOST_TEST_REQUIRE(has_line(out, std::string(arch) == "compute_90" ? "compiles: 0" : "compiles: 1"), out);
  }
  return file;
}

kjit::Config config_at(const kjit::Config& base, const std::string& dir)
{
  kjit::Config config = base;
  config.cache_dir = dir;
  return config;
}

void flip_byte(const std::string& path, std::size_t from_end)
{
  std::string bytes = read_text(path);
  bytes[bytes.size() - from_end] ^= 0x11;
  write_text(path, bytes);
}

// One zstd frame of `size` zero bytes (its content size in the frame header), made a MiB at a
// time: a few KiB that expand to `size`.
std::string zero_frame(std::size_t size)
{
  ZSTD_CCtx* context = ZSTD_createCCtx();
  ZSTD_CCtx_setPledgedSrcSize(context, size);
  const std::string zeros(std::size_t{1} << 20, '\0');
  std::string frame;
  std::string buffer(ZSTD_CStreamOutSize(), '\0');
  for (std::size_t left = size;;) {
    const std::size_t n = std::min(left, zeros.size());
    left -= n;
    ZSTD_inBuffer in{zeros.data(), n, 0};
    const ZSTD_EndDirective mode = left == 0 ? ZSTD_e_end : ZSTD_e_continue;
    for (std::size_t pending = 1; mode == ZSTD_e_end ? pending != 0 : in.pos < in.size;) {
      ZSTD_outBuffer out{buffer.data(), buffer.size(), 0};
      pending = ZSTD_compressStream2(context, &out, &in, mode);
      frame.append(buffer.data(), out.pos);
    }
    if (left == 0) {
      break;
    }
  }
  ZSTD_freeCCtx(context);
  return frame;
}

// `record` (self-contained, as a bundle holds it) with `count` more headers in its inputs section,
// each content `frame` (compressed), and the section's size and checksum made to match: what a
// hostile bundle can hold (the sums are no secret). Layout: docs/cache-format.md, "Record grammar".
std::string with_headers(std::string record, const std::string& frame, int count)
{
  const auto artifacts = kjit::util::get_int<std::uint64_t>(record, 16);
  for (int i = 0; i < count; ++i) {
    const std::string name = "bomb" + std::to_string(i) + ".h";
    kjit::util::put_int(record, std::uint16_t{5});  // header name
    kjit::util::put_int(record, static_cast<std::uint32_t>(name.size()));
    record += name;
    kjit::util::put_int(record, std::uint16_t{6 | 0x8000});  // header content, one zstd frame
    kjit::util::put_int(record, static_cast<std::uint32_t>(frame.size()));
    record += frame;
  }
  const std::string_view inputs = std::string_view(record).substr(64 + artifacts);
  std::string size;
  kjit::util::put_int(size, static_cast<std::uint64_t>(inputs.size()));
  record.replace(40, 8, size);
  const kjit::util::Checksum sum = kjit::util::checksum(inputs);
  record.replace(48, 16, std::string(reinterpret_cast<const char*>(sum.data()), sum.size()));
  return record;
}

// A size of this process from /proc/self/status in KiB ("VmSize:", "VmHWM:": the high-water mark
// of its resident memory).
std::size_t status_kib(const char* field)
{
  std::istringstream status(read_text("/proc/self/status"));
  for (std::string line; std::getline(status, line);) {
    if (line.rfind(field, 0) == 0) {
      return std::stoul(line.substr(std::strlen(field)));
    }
  }
  return 0;
}

// Imports `pack` into a Cache of `target` in a child whose address space is what it has mapped
// (the store included) plus 1 GiB, and returns the child's status: exit 0 when the import threw a
// BundleError saying `why` and stored nothing, 2 when it said otherwise or stored something, 3 on
// std::bad_alloc, 4 on another exception, 5 when it imported.
int import_under_a_memory_limit(const kjit::Config& target, const std::string& pack, const std::string& why)
{
  const pid_t child = ::fork();
  BOOST_TEST_REQUIRE(child >= 0);
  if (child == 0) {
    kjit::Cache cache(target);  // its store mapped before the limit
    const std::size_t vm_kib = status_kib("VmSize:");
    const rlimit limit{vm_kib * 1024 + (std::size_t{1} << 30), vm_kib * 1024 + (std::size_t{1} << 30)};
    ::setrlimit(RLIMIT_AS, &limit);
    try {
      cache.import_bundle(pack);
    } catch (const kjit::BundleError& e) {
      ::_exit(std::string(e.what()).find(why) != std::string::npos && cache.disk_entries() == 0 ? 0 : 2);
    } catch (const std::bad_alloc&) {
      ::_exit(3);
    } catch (...) {
      ::_exit(4);
    }
    ::_exit(5);
  }
  return wait_status(child);
}

} // namespace

BOOST_FIXTURE_TEST_SUITE(bundle, CacheFixture)

BOOST_AUTO_TEST_CASE(an_imported_bundle_serves_every_arch_without_nvrtc)
{
  const std::string file = warm_three_archs(config, tmp.path());
  const std::string pack = tmp.path() + "/kernels.kjitpack";
  {
    kjit::Cache cache(config);
    const kjit::BundleReport exported = cache.export_bundle(pack);
    BOOST_TEST(exported.entries == 3u);
  }
  const std::string other = tmp.path() + "/elsewhere/cache";
  {
    kjit::Cache target(config_at(config, other));
    const kjit::BundleReport imported = target.import_bundle(pack);
    BOOST_TEST(imported.entries == 3u);
    BOOST_TEST(imported.rejected.empty());
    BOOST_TEST(target.disk_entries() == 3u);
    BOOST_TEST(target.import_bundle(pack).already_present == 3u);  // importing again changes nothing
    // The name index came along: explain finds the imported entries of the program.
    kjit::Program changed = kjit::program_from_file(file);
    changed.source += "// changed\n";
    const kjit::MissExplanation why = target.explain(changed, kjit::Arch::parse("sm_90"));
    BOOST_TEST(!why.closest_key.empty());
  }
  for (const char* arch : k_archs) {
    const std::string out = probe(other, file, arch);
    BOOST_TEST(has_line(out, "result: ok"), out);
    BOOST_TEST(has_line(out, "disk_hits: 1"), out);
    BOOST_TEST(has_line(out, "compiles: 0"), out);
    BOOST_TEST(has_line(out, "nvrtc_loaded: 0"), out);
    BOOST_TEST(has_line(out, "nvjitlink_loaded: 0"), out);
  }
}

BOOST_AUTO_TEST_CASE(a_bundle_named_by_kjit_bundle_is_a_tier_below_the_store)
{
  const std::string file = warm_three_archs(config, tmp.path());
  const std::string pack = tmp.path() + "/kernels.kjitpack";
  kjit::Cache(config).export_bundle(pack);
  const std::string empty = tmp.path() + "/fresh";
  for (const char* arch : k_archs) {
    const std::string out = probe(empty, file, arch, "KJIT_BUNDLE='/nonexistent.kjitpack:" + pack + "'");
    BOOST_TEST(has_line(out, "result: ok"), out);
    BOOST_TEST(has_line(out, "compiles: 0"), out);
    BOOST_TEST(has_line(out, "nvrtc_loaded: 0"), out);
  }
  // Each hit was promoted into the local store: the next process finds it there, without the bundle.
  for (const char* arch : k_archs) {
    const std::string out = probe(empty, file, arch);
    BOOST_TEST(has_line(out, "disk_hits: 1"), out);
    BOOST_TEST(has_line(out, "compiles: 0"), out);
  }
}

// Issue 38: a bundle used on another machine, where the toolkit's library files are other files
// (here: the same bytes under another path, which names other files to the identity rows). Before,
// the bundle's version rows named the exporting machine's files, and the empty store loaded NVRTC
// to learn its versions; now the row named by the libraries' GNU build IDs finds them.
BOOST_AUTO_TEST_CASE(a_bundle_on_another_machine_loads_no_compiler)
{
  const std::string file = warm_three_archs(config, tmp.path());
  const std::string pack = tmp.path() + "/kernels.kjitpack";
  kjit::Cache(config).export_bundle(pack);
  const std::string toolkit = kjit::current_config().cuda_home.empty() ? "/usr/local/cuda" : kjit::current_config().cuda_home;
  const std::string other = tmp.path() + "/other-toolkit";
  BOOST_TEST_REQUIRE(::mkdir(other.c_str(), 0700) == 0);
  for (const char* part : {"/lib64", "/include", "/version.json"}) {
    BOOST_TEST_REQUIRE(::symlink((toolkit + part).c_str(), (other + part).c_str()) == 0);
  }
  for (const char* arch : k_archs) {
    const std::string out =
      probe(tmp.path() + "/fresh", file, arch, "KJIT_CUDA_HOME='" + other + "' KJIT_BUNDLE='" + pack + "'");
    BOOST_TEST(has_line(out, "result: ok"), out);
    BOOST_TEST(has_line(out, "compiles: 0"), out);
    BOOST_TEST(has_line(out, "nvrtc_loaded: 0"), out);  // was 1
    BOOST_TEST(has_line(out, "nvjitlink_loaded: 0"), out);
  }
  for (const char* name : {"/lib64", "/include", "/version.json"}) {
    std::ignore = ::unlink((other + name).c_str());  // before the fixture's cleanup follows them
  }
}

BOOST_AUTO_TEST_CASE(a_bundle_carries_scripts_and_their_dispatch_tables)
{
  // A tuned kernel family ships as its kernels do (issue 39: after export and import into a new
  // folder, `kjit script list` was empty and a dispatch with no tuner failed there).
  kjit::Cache cache(config);
  kjit::BuiltScript built = macro_script().build(cache, test_batch());
  built.set_table({{{1024}, 2, "", {}}}, kjit::Fingerprint{"*", "*", "*", "*", "*"});
  const std::string pack = tmp.path() + "/family.kjitpack";
  const kjit::BundleReport exported = cache.export_bundle(pack);
  BOOST_TEST(exported.entries == 3u);
  BOOST_TEST(exported.scripts == 2u);  // the script's record and its table's

  kjit::Cache imported(config_at(config, tmp.path() + "/elsewhere"));
  BOOST_TEST(imported.import_bundle(pack).scripts == 2u);
  const std::vector<kjit::ScriptSummary> scripts = kjit::stored_scripts(imported);
  BOOST_TEST_REQUIRE(scripts.size() == 1u);
  BOOST_TEST(scripts[0].hash == built.hash());
  BOOST_TEST_REQUIRE(scripts[0].table.size() == 1u);
  BOOST_TEST(scripts[0].table[0].choice == 2u);
  // Built there from the imported entries (no compile), it dispatches by the shipped row: with no
  // timer or cost function, a key missing from the table would be a ScriptError.
  kjit::BuiltScript there = macro_script().build(imported, test_batch());
  BOOST_TEST(imported.stats().compiles == 0u);
  BOOST_TEST(there.dispatch_sizes(1000)->cubin == there.binary(2)->cubin);  // 1000 → key 1024
  BOOST_TEST(there.binary(2)->cubin != there.binary(0)->cubin);
  // Imported again: nothing added (a table the store has already stays as it is).
  BOOST_TEST(imported.import_bundle(pack).scripts == 0u);
}

BOOST_AUTO_TEST_CASE(a_damaged_or_foreign_script_row_in_a_bundle_is_rejected_and_a_good_one_replaces_a_damaged_row)
{
  // Review: rows were stored without being decoded: a damaged one was counted as imported and
  // then kept a good one out for good (the store "had" the key), and one naming another script's
  // hash was listed under a folder of ../ parts.
  kjit::Cache cache(config);
  const kjit::BuiltScript built = macro_script().build(cache, test_batch());
  const std::string key = "script/" + built.hash();
  const std::string good = *kjit::script::store_of(cache)->get(kjit::store::Table::meta, key);
  std::string flipped = good;
  flipped[flipped.size() - 1] ^= 0x20;  // the body: its checksum no longer holds
  const std::string foreign_key = "script/" + std::string(64, 'e');  // the record holds built.hash()
  const std::string path = tmp.path() + "/rows.kjitpack";
  kjit::bundle::write_bundle(path, {}, {{key, flipped}, {foreign_key, good}}, kjit::store::k_record_format);

  kjit::Cache elsewhere(config_at(config, tmp.path() + "/elsewhere"));
  const kjit::BundleReport report = elsewhere.import_bundle(path);
  BOOST_TEST(report.scripts == 0u);
  BOOST_TEST_REQUIRE(report.rejected.size() == 2u);
  BOOST_TEST(report.rejected[0].second == "the script record does not decode (damaged)");
  BOOST_TEST(report.rejected[1].second == "the script record holds another script's hash");
  BOOST_TEST(kjit::stored_scripts(elsewhere).empty());

  // A damaged row already in the store is replaced by the bundle's good one.
  kjit::script::store_of(elsewhere)->put(kjit::store::Table::meta, key, flipped);
  const std::string fine = tmp.path() + "/fine.kjitpack";
  kjit::bundle::write_bundle(fine, {}, {{key, good}}, kjit::store::k_record_format);
  BOOST_TEST(elsewhere.import_bundle(fine).scripts == 1u);
  BOOST_TEST_REQUIRE(kjit::stored_scripts(elsewhere).size() == 1u);
  BOOST_TEST(kjit::stored_scripts(elsewhere)[0].hash == built.hash());
}

BOOST_AUTO_TEST_CASE(bundle_hits_are_counted_and_export_filters)
{
  const std::string file = warm_three_archs(config, tmp.path());
  const std::string pack = tmp.path() + "/sm90.kjitpack";
  const kjit::BundleReport exported = kjit::Cache(config).export_bundle(pack, {"", "sm_90"});
  BOOST_TEST(exported.entries == 1u);
  kjit::Config with_bundle = config_at(config, tmp.path() + "/tiered");
  with_bundle.bundles = {pack};
  kjit::Cache cache(with_bundle);
  const auto hit = cache.get(kjit::program_from_file(file), kjit::Arch::parse("sm_90"));
  BOOST_TEST(!hit->cubin.empty());
  BOOST_TEST(cache.stats().bundle_hits == 1u);
  BOOST_TEST(cache.stats().compiles == 0u);
  BOOST_TEST(cache.disk_entries() == 1u);  // promoted
  cache.get(kjit::program_from_file(file), kjit::Arch::parse("sm_80"));  // not in the bundle
  BOOST_TEST(cache.stats().compiles == 1u);
  BOOST_TEST(cache.stats().misses == 1u);
}

BOOST_AUTO_TEST_CASE(an_unreadable_or_damaged_bundle_is_a_counted_miss_never_an_exception)
{
  const std::string file = warm_three_archs(config, tmp.path());
  const std::string pack = tmp.path() + "/kernels.kjitpack";
  kjit::Cache(config).export_bundle(pack);
  const std::string truncated = tmp.path() + "/truncated.kjitpack";
  write_text(truncated, read_text(pack).substr(0, read_text(pack).size() - 10));

  std::vector<std::string> lines;
  kjit::set_log_sink([&lines](std::string_view line) { lines.emplace_back(line); });
  kjit::Config with_bundle = config_at(config, tmp.path() + "/tiered");
  with_bundle.bundles = {tmp.path() + "/missing.kjitpack", truncated};
  kjit::Cache cache(with_bundle);
  BOOST_CHECK_NO_THROW(cache.get(kjit::program_from_file(file), kjit::Arch::parse("sm_90")));
  BOOST_CHECK_NO_THROW(cache.get(small_program("other"), kjit::Arch::parse("sm_90")));
  kjit::set_log_sink({});
  BOOST_TEST(cache.stats().tier_errors == 4u);  // two tiers, two lookups
  BOOST_TEST(cache.stats().compiles == 2u);
  BOOST_TEST_REQUIRE(lines.size() == 2u);       // each unreadable bundle is logged once
  BOOST_TEST(lines[0].find("missing.kjitpack") != std::string::npos, lines[0]);
  BOOST_TEST(lines[1].find("truncated") != std::string::npos, lines[1]);

  // A record damaged inside an intact file (sums recomputed) is refused by decode_record.
  kjit::bundle::Reader reader(pack);
  std::vector<kjit::bundle::Record> records;
  for (const auto& index : reader.index()) {
    std::string bytes = reader.read(index);
    bytes[bytes.size() - 40] ^= 0x5a;
    records.push_back({index.entry_key, bytes});
  }
  const std::string bad = tmp.path() + "/bad-records.kjitpack";
  kjit::bundle::write_bundle(bad, records, reader.meta(), kjit::store::k_record_format);
  kjit::Config with_bad = config_at(config, tmp.path() + "/tiered-bad");
  with_bad.bundles = {bad};
  kjit::Cache bad_cache(with_bad);
  kjit::set_log_sink([](std::string_view) {});
  BOOST_CHECK_NO_THROW(bad_cache.get(kjit::program_from_file(file), kjit::Arch::parse("sm_80")));
  kjit::set_log_sink({});
  BOOST_TEST(bad_cache.stats().tier_errors == 1u);
  BOOST_TEST(bad_cache.stats().bundle_hits == 0u);
  BOOST_TEST(bad_cache.stats().compiles == 1u);
}

BOOST_AUTO_TEST_CASE(a_truncated_or_corrupt_bundle_imports_nothing)
{
  warm_three_archs(config, tmp.path());
  const std::string pack = tmp.path() + "/kernels.kjitpack";
  kjit::Cache(config).export_bundle(pack);
  const std::string whole = read_text(pack);
  kjit::Cache target(config_at(config, tmp.path() + "/target"));

  write_text(pack, whole.substr(0, whole.size() / 2));
  BOOST_CHECK_THROW(target.import_bundle(pack), kjit::BundleError);
  write_text(pack, whole);
  flip_byte(pack, 100);  // inside the last record: the data checksum fails
  BOOST_CHECK_THROW(target.import_bundle(pack), kjit::BundleError);
  write_text(pack, "not a bundle at all");
  BOOST_CHECK_THROW(target.import_bundle(pack), kjit::BundleError);
  BOOST_CHECK_THROW(target.import_bundle(tmp.path() + "/missing.kjitpack"), kjit::BundleError);
  try {
    write_text(pack, whole.substr(0, whole.size() - 1));
    target.import_bundle(pack);
  } catch (const kjit::BundleError& e) {
    BOOST_TEST(std::string(e.what()).find("truncated") != std::string::npos, e.what());
    BOOST_TEST(e.path() == pack);
  }
  BOOST_TEST(target.disk_entries() == 0u);
}

// A bundle declaring (and being, sparse) 3 GiB is refused as damaged (BundleError, cache
// untouched) under an address-space limit of 1 GiB more than the process holds: its data sum is
// computed a piece at a time, and a meta section (toolchain rows) or an index (more entries than
// a bundle may hold) that large is impossible. All three were read into one string first:
// std::bad_alloc here (no typed error), and without a limit 3 GiB of memory taken (in a host
// reading the bundle as a tier, for the meta section and the index; twice that for the index).
BOOST_AUTO_TEST_CASE(a_huge_bundle_is_refused_without_holding_it_in_memory)
{
  for (const std::string huge : {"data", "meta", "index"}) {
    const bool huge_meta = huge != "data";  // refused by its header, before anything is read
    const std::string pack = tmp.path() + "/huge.kjitpack";
    kjit::bundle::Header header;
    constexpr std::uint64_t k_huge = std::uint64_t{3} << 30;
    if (huge == "index") {
      header.entries = k_huge / kjit::bundle::k_index_entry_size;
    } else {
      (huge == "meta" ? header.meta_size : header.data_size) = k_huge;
    }
    header.index_sum = kjit::util::checksum("");
    header.meta_sum = kjit::util::checksum("");
    write_text(pack, kjit::bundle::encode_header(header));
    BOOST_TEST_REQUIRE(::truncate(pack.c_str(), static_cast<off_t>(header.file_size())) == 0);
    const std::string why = huge_meta ? "impossible sizes" : "data checksum mismatch";
    const int status = import_under_a_memory_limit(config_at(config, tmp.path() + "/target"), pack, why);
    BOOST_TEST((WIFEXITED(status) && WEXITSTATUS(status) == 0), huge + ": " + status_text(status));
  }
}

// The writer refuses a meta section larger than a reader takes (16 MiB), as it refuses more
// entries than a reader takes: it wrote the bundle, which every import then refused as damaged.
BOOST_AUTO_TEST_CASE(a_meta_section_no_reader_takes_is_never_written)
{
  const std::string pack = tmp.path() + "/big_meta.kjitpack";
  const std::vector<kjit::bundle::MetaRow> meta{
    {"toolchain big", std::string(static_cast<std::size_t>(kjit::bundle::k_meta_max), 'x')}};
  BOOST_CHECK_THROW(kjit::bundle::write_bundle(pack, {}, meta, kjit::store::k_record_format), kjit::BundleError);
  BOOST_TEST(::access(pack.c_str(), F_OK) != 0);
  // At the limit it is written and read back.
  const std::vector<kjit::bundle::MetaRow> fits{
    {"toolchain big", std::string(static_cast<std::size_t>(kjit::bundle::k_meta_max) - 8 - 13, 'x')}};
  kjit::bundle::write_bundle(pack, {}, fits, kjit::store::k_record_format);
  BOOST_TEST(kjit::bundle::Reader(pack).meta().size() == 1u);
}

BOOST_AUTO_TEST_CASE(import_never_replaces_a_good_entry_with_a_bad_one)
{
  const std::string file = warm_three_archs(config, tmp.path());
  const std::string pack = tmp.path() + "/kernels.kjitpack";
  kjit::Cache(config).export_bundle(pack);
  kjit::bundle::Reader reader(pack);
  std::vector<kjit::bundle::Record> records;
  for (const auto& index : reader.index()) {
    records.push_back({index.entry_key, reader.read(index)});
  }
  // Record 0 damaged (its own checksum fails), record 1 stored under the wrong key.
  records[0].bytes[records[0].bytes.size() - 40] ^= 0x5a;
  records[1].key = records[2].key;
  records[1].key[31] ^= 1;
  const std::string bad = tmp.path() + "/bad.kjitpack";
  kjit::bundle::write_bundle(bad, records, reader.meta(), kjit::store::k_record_format);

  // The target already has a good copy of record 0.
  const std::string target_dir = tmp.path() + "/target";
  kjit::Cache target(config_at(config, target_dir));
  kjit::Cache source(config);
  const std::string good0 =
    *kjit::store::Store::open(source.store_path(), config.store_map_size)->get(kjit::store::Table::entries,
                                                                              std::string(reinterpret_cast<const char*>(reader.index()[0].entry_key.data()), 32));
  target.import_bundle(pack);  // all good
  const kjit::BundleReport report = target.import_bundle(bad);
  BOOST_TEST(report.rejected.size() == 2u);
  BOOST_TEST(report.entries == 0u);
  auto store = kjit::store::Store::open(target.store_path(), config.store_map_size);
  const auto kept = store->get(kjit::store::Table::entries,
                               std::string(reinterpret_cast<const char*>(reader.index()[0].entry_key.data()), 32));
  BOOST_TEST((kept && *kept == good0));
  BOOST_TEST(target.disk_entries() == 3u);
  BOOST_TEST(target.verify(kjit::Repair::no).bad.empty());
  // `kjit import` says so by its exit code, 1 (a script must not take a partial import for a
  // whole one; exit 0 was a surviving semantic mutant: docs/testing.md).
  const std::string binaries = helper("KJIT_TEST_BINARIES");
  const std::string kjit = binaries.substr(binaries.find(' ') + 1);
  std::string output;
  BOOST_TEST(run("'" + kjit + "' import '" + bad + "' --cache-dir '" + tmp.path() + "/cli' 2>&1", output) == 1, output);
  BOOST_TEST(output.find("kjit import: rejected ") != std::string::npos, output);
}

// An import writes entries, so KJIT_MAX_SIZE applies after it as after any write: the least
// recently used go until the entries take at most 90% of it. It was never checked: an import left
// the cache over its limit until some later compile (12 times over in the CLI check).
BOOST_AUTO_TEST_CASE(an_import_keeps_the_cache_within_its_size_limit)
{
  warm_three_archs(config, tmp.path());
  const std::string pack = tmp.path() + "/kernels.kjitpack";
  kjit::Cache(config).export_bundle(pack);
  kjit::Config limited = config_at(config, tmp.path() + "/limited");
  limited.max_size = 4096;  // less than any one entry with its mirror folder
  kjit::Cache target(limited);
  BOOST_TEST(target.import_bundle(pack).entries == 3u);
  BOOST_TEST(target.disk_entries() == 0u);
  BOOST_TEST(target.usage().record_bytes == 0u);
}

// A record whose compressed fields together claim more than any record holds (three headers of
// 1 GiB each from a few KiB of zstd frames, checksums made to match) is refused as damaged before
// any is expanded, and the cache is left as it was. Each field was expanded in turn (only one
// field's size was bounded, at 2 GiB), so a bundle of a few KiB took gigabytes; here, under an
// address-space limit, the second expansion ran out of memory.
BOOST_AUTO_TEST_CASE(a_record_whose_fields_expand_to_gigabytes_is_refused_unexpanded)
{
  warm_three_archs(config, tmp.path());
  const std::string pack = tmp.path() + "/kernels.kjitpack";
  kjit::Cache(config).export_bundle(pack);
  const kjit::bundle::Reader reader(pack);
  const kjit::bundle::IndexEntry first = reader.index().front();
  const std::string bomb = with_headers(reader.read(first), zero_frame(std::size_t{1} << 30), 3);
  BOOST_TEST_REQUIRE(bomb.size() < (std::size_t{1} << 20));
  const std::string hostile = tmp.path() + "/hostile.kjitpack";
  kjit::bundle::write_bundle(hostile, {{first.entry_key, bomb}}, reader.meta(), kjit::store::k_record_format);
  const kjit::Config target = config_at(config, tmp.path() + "/target");
  const pid_t child = ::fork();
  BOOST_TEST_REQUIRE(child >= 0);
  if (child == 0) {
    kjit::Cache cache(target);  // its store mapped before the limit
    const std::size_t headroom = std::size_t{3} << 29;  // 1.5 GiB: one expansion fits, two do not
    const std::size_t vm_bytes = status_kib("VmSize:") * 1024;
    const rlimit limit{vm_bytes + headroom, vm_bytes + headroom};
    ::setrlimit(RLIMIT_AS, &limit);
    const std::size_t before = status_kib("VmHWM:");
    try {
      const kjit::BundleReport report = cache.import_bundle(hostile);
      const bool refused = report.entries == 0 && report.rejected.size() == 1 &&
                           report.rejected[0].second.find("expand to more than") != std::string::npos;
      ::_exit(!refused ? 2 : status_kib("VmHWM:") - before > (std::size_t{256} << 10) ? 3 : cache.disk_entries() != 0 ? 4 : 0);
    } catch (...) {
      ::_exit(5);
    }
  }
  const int status = wait_status(child);
  BOOST_TEST((WIFEXITED(status) && WEXITSTATUS(status) == 0), status_text(status));
}

BOOST_AUTO_TEST_CASE(import_without_a_disk_tier_is_refused)
{
  warm_three_archs(config, tmp.path());
  const std::string pack = tmp.path() + "/kernels.kjitpack";
  kjit::Cache(config).export_bundle(pack);
  kjit::Config disabled = config;
  disabled.disable_cache = true;
  BOOST_CHECK_THROW(kjit::Cache(disabled).import_bundle(pack), kjit::StoreError);
}

BOOST_AUTO_TEST_CASE(the_format_1_reference_bundle_still_reads)
{
  // tests/unit/bundles/format1.kjitpack: two records (keys 0x11…, 0x22…) and one meta row, written
  // by the format-1 writer. A change that can't read it needs a new bundle format version.
  const char* root = std::getenv("KJIT_SOURCE_ROOT");
  BOOST_TEST_REQUIRE(root != nullptr);
  const std::string golden = std::string(root) + "/tests/unit/bundles/format1.kjitpack";
  const kjit::bundle::Reader reader(golden);
  BOOST_CHECK_NO_THROW(reader.verify_data());
  BOOST_TEST(reader.header().format == 1u);
  BOOST_TEST(reader.header().record_format == 2u);
  BOOST_TEST_REQUIRE(reader.index().size() == 2u);
  kjit::util::Sha256 first{};
  first.fill(0x11);
  kjit::util::Sha256 second{};
  second.fill(0x22);
  BOOST_TEST_REQUIRE(reader.find(first) != nullptr);
  BOOST_TEST(reader.read(*reader.find(first)) == "first record bytes");
  BOOST_TEST(reader.read(*reader.find(second)) == "second");
  kjit::util::Sha256 absent{};
  BOOST_TEST(reader.find(absent) == nullptr);
  BOOST_TEST_REQUIRE(reader.meta().size() == 1u);
  BOOST_TEST(reader.meta()[0].key == "toolchain abc");
  BOOST_TEST(reader.meta()[0].value == "13.0 V13.0.88\n13.0\n75 80");

  // Every truncation and every flipped byte of the header, index or meta is refused at open.
  const std::string bytes = read_text(golden);
  const std::string damaged = tmp.path() + "/damaged.kjitpack";
  const std::size_t checked_at_open = bytes.size() - std::string("first record bytessecond").size();
  for (std::size_t at = 0; at < bytes.size(); ++at) {
    write_text(damaged, bytes.substr(0, at));
    BOOST_CHECK_THROW(kjit::bundle::Reader{damaged}, kjit::BundleError);
    std::string flipped = bytes;
    flipped[at] ^= 0x01;
    write_text(damaged, flipped);
    if (at < checked_at_open) {
      BOOST_CHECK_THROW(kjit::bundle::Reader{damaged}, kjit::BundleError);
    } else {
      BOOST_CHECK_THROW(kjit::bundle::Reader(damaged).verify_data(), kjit::BundleError);
    }
  }
}

// Guards util::write_file_atomic (a temp file, then a rename), which writes bundles, index.txt and
// the mirror's shared headers: an export that fails half way (a 1 KiB file size limit, as a full
// disk) leaves the bundle already there whole and no temp file. Written in place instead, the old
// bundle was truncated, then deleted (a semantic mutant: docs/testing.md).
BOOST_AUTO_TEST_CASE(an_export_that_fails_half_way_leaves_the_old_bundle_whole)
{
  kjit::Cache(config).get(small_program("exported"), kjit::Arch::parse("sm_90"));
  const std::string pack = tmp.path() + "/kernels.kjitpack";
  kjit::Cache(config).export_bundle(pack);
  const std::string before = read_text(pack);
  BOOST_TEST_REQUIRE(before.size() > 2048u);  // more than the limit below lets through
  const std::string binaries = helper("KJIT_TEST_BINARIES");
  const std::string kjit = binaries.substr(binaries.find(' ') + 1);
  std::string output;
  // SIGXFSZ ignored (kept across exec): a write past the limit fails with EFBIG instead.
  const int status = run("trap '' XFSZ; exec prlimit --fsize=1024 '" + kjit + "' export '" + pack + "' --cache-dir '" +
                           config.cache_dir + "' 2>&1", output);
  BOOST_TEST(status != 0, output);
  BOOST_TEST(read_text(pack) == before);
  for (const auto& e : std::filesystem::directory_iterator(tmp.path())) {
    BOOST_TEST(e.path().filename().string().find(".tmp.") == std::string::npos, e.path());
  }
}

// A bundle whose sums all hold (a bundle made by another program can have them right) but whose
// index says its entry is 3 GiB long, in a data section of 100 bytes: refused when it is opened
// (BundleError, nothing imported). Without the index's bounds check it opened, and the import
// read the entry into a 3 GiB string: std::bad_alloc under this limit, else 3 GiB of memory taken
// before the read failed (a surviving mutant, docs/testing.md). The tier's lookup read it the
// same way, in the host's process.
BOOST_AUTO_TEST_CASE(an_index_entry_past_the_data_is_refused_before_it_is_read)
{
  const std::string pack = tmp.path() + "/past.kjitpack";
  const std::string data(100, 'x');
  kjit::bundle::IndexEntry entry;
  entry.entry_key.fill(0x11);
  entry.size = std::uint64_t{3} << 30;
  const std::string index = kjit::bundle::encode_index({entry});
  kjit::bundle::Header header;
  header.record_format = kjit::store::k_record_format;
  header.entries = 1;
  header.data_size = data.size();
  header.index_sum = kjit::util::checksum(index);
  header.meta_sum = kjit::util::checksum("");
  header.data_sum = kjit::util::checksum(data);
  write_text(pack, kjit::bundle::encode_header(header) + index + data);
  try {
    kjit::bundle::Reader reader(pack);
    BOOST_ERROR("a bundle whose entry lies past its data was opened");
  } catch (const kjit::BundleError& e) {
    BOOST_TEST(std::string(e.what()).find("lies outside the data") != std::string::npos, e.what());
  }
  const int status = import_under_a_memory_limit(config_at(config, tmp.path() + "/target"), pack, "");
  BOOST_TEST((WIFEXITED(status) && WEXITSTATUS(status) == 0), status_text(status));
}

// An entry another process removes while an export runs (after the listing of the keys; here from
// the test hook at that moment) is left out without being called damaged. (Before, kjit export
// said "left out N damaged entries (see kjit verify)" beside a prune, on a sound store; found by
// the chaos review of 2026-11-24.)
BOOST_AUTO_TEST_CASE(an_entry_removed_during_an_export_is_not_called_damaged)
{
  kjit::Cache cache(config);
  const auto kept = cache.prepare(small_program("exported"), kjit::Arch::parse("sm_90"));
  const auto removed = cache.prepare(small_program("pruned"), kjit::Arch::parse("sm_90"));
  cache.get(kept);
  cache.get(removed);
  kjit::cache::set_listed_keys_hook([&] {
    kjit::store::Store::open(cache.store_path(), config.store_map_size)
      ->erase(kjit::store::Table::entries, {kjit::test::raw_key(removed)});
  });
  const kjit::BundleReport report = cache.export_bundle(tmp.path() + "/during_prune.kjitpack");
  kjit::cache::set_listed_keys_hook({});
  BOOST_TEST(report.entries == 1u);
  BOOST_TEST(report.skipped_damaged == 0u);
}

BOOST_AUTO_TEST_SUITE_END()
