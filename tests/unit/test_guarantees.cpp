// The promises users choose kjit for, tested end to end: one compile for many processes and
// threads, the toolchain's build in the key, orphans of another toolchain.
#include <boost/test/unit_test.hpp>

#include "fixture.hpp"

#include "store/meta_keys.hpp"
#include "store/store.hpp"

#include <dlfcn.h>
#include <map>
#include <sys/stat.h>
#include <unistd.h>
#include <sstream>
#include <thread>

using namespace kjit::test;

namespace {

// "key: value" lines of a cache_probe output.
std::map<std::string, std::string> fields_of(const std::string& output)
{
  std::map<std::string, std::string> fields;
  std::istringstream lines(output);
  std::string line;
  while (std::getline(lines, line)) {
    const auto colon = line.find(": ");
    if (colon != std::string::npos) {
      fields[line.substr(0, colon)] = line.substr(colon + 2);
    }
  }
  return fields;
}

unsigned long long number(const std::map<std::string, std::string>& fields, const std::string& name)
{
  const auto it = fields.find(name);
  return it == fields.end() ? 1000000ull : std::stoull(it->second);
}

// Starts `processes` cache_probe processes with `threads` threads each on one file, waits until
// all of them have prepared the program, releases them together and returns their outputs.
std::vector<std::string> race(const std::string& work, const std::string& cache_dir, const std::string& file,
                              int processes, int threads)
{
  const std::string go = work + "/go";
  std::string script = "cd '" + work + "' && for i in $(seq 1 " + std::to_string(processes) + "); do '" +
                       helper("KJIT_TEST_CACHE_PROBE") + "' '" + cache_dir + "' '" + file + "' sm_90 --threads " +
                       std::to_string(threads) + " --start-file '" + go + "' >out.$i 2>&1 & done; " +
                       "n=0; while [ $(ls | grep -c '^go.ready') -lt " + std::to_string(processes) +
                       " ] && [ $n -lt 6000 ]; do sleep 0.01; n=$((n+1)); done; touch '" + go + "'; wait";
  std::string ignored;
  run(script, ignored);
  std::vector<std::string> outputs;
  for (int i = 1; i <= processes; ++i) {
    outputs.push_back(read_text(work + "/out." + std::to_string(i)));
  }
  return outputs;
}

// The "nvrtc: " line of an options.txt.
std::string nvrtc_line(const std::string& options_txt)
{
  const auto at = options_txt.find("\nnvrtc: ");
  if (at == std::string::npos) {
    return {};
  }
  return options_txt.substr(at + 1, options_txt.find('\n', at + 1) - at - 1);
}

// The text after `marker` up to the end of its line in `text`; empty if absent.
std::string after(const std::string& text, const std::string& marker)
{
  const auto at = text.find(marker);
  if (at == std::string::npos) {
    return {};
  }
  const auto start = at + marker.size();
  return text.substr(start, text.find('\n', start) - start);
}

// Compiles a program in a fresh process, then rewrites the toolchain identity the store remembers
// so that its line `line` (0: NVRTC's build, 1: nvJitLink's version) names another toolchain, as
// after an upgrade: the entry, and a record that fails to decode, are orphans; removing them removes
// the entry's mirror folder too.
void check_entries_of_another_toolchain_are_orphans(const std::string& work, const kjit::Config& config, int line)
{
  // A fresh process records its toolchain's identity in the store (this one remembers it in memory).
  const std::string file = work + "/orphan.cu";
  write_text(file, small_program("orphan").source);
  std::string probe_output;
  BOOST_TEST_REQUIRE(run("'" + helper("KJIT_TEST_CACHE_PROBE") + "' '" + config.cache_dir + "' '" + file + "' sm_90",
                         probe_output) == 0,
                     probe_output);
  // Another toolchain: the remembered identity says so (a new process reads it).
  {
    auto store = kjit::store::Store::open(config.cache_dir + "/store", 1u << 26);
    std::vector<kjit::store::Store::Row> rows;
    store->for_each(kjit::store::Table::meta, [&](std::string_view key, std::string_view value) {
      const std::string text(value);
      if (key.rfind("toolchain ", 0) == 0 && key.find(" files") == std::string_view::npos &&
          key.rfind("toolchain context ", 0) != 0) {
        std::size_t newline = text.find('\n');
        for (int i = 0; i < line; ++i) {
          newline = text.find('\n', newline + 1);
        }
        rows.push_back({kjit::store::Table::meta, std::string(key),
                        text.substr(0, newline) + "-other" + text.substr(newline)});
      }
    });
    BOOST_TEST_REQUIRE(rows.size() == 2u);  // the versions by the files' identity and by their build IDs
    // And a record that fails to decode: an orphan too, deleted without quarantine.
    rows.push_back({kjit::store::Table::entries, std::string(32, '\x02'), "not a record"});
    store->put(rows);
  }
  std::string binaries = helper("KJIT_TEST_BINARIES");
  const std::string kjit = binaries.substr(binaries.find(' ') + 1);
  const std::string env = "KJIT_CACHE_DIR='" + config.cache_dir + "' '" + kjit + "' cache orphans";
  std::string output;
  BOOST_TEST(run(env, output) == 0, output);
  BOOST_TEST(output.size() == 2 * 65u, output);  // two keys, a line each
  std::string undecodable;
  for (int i = 0; i < 32; ++i) {
    undecodable += "02";
  }
  BOOST_TEST(output.find(undecodable + "\n") != std::string::npos, output);
  const std::string mirrored = config.cache_dir + "/programs/" + fields_of(probe_output)["key"];
  BOOST_TEST(exists(mirrored + "/options.txt"), mirrored);
  BOOST_TEST(run(env + " --remove", output) == 0, output);
  BOOST_TEST(output.find("removed 2 orphans") != std::string::npos, output);
  BOOST_TEST(!exists(mirrored), mirrored);  // the mirror goes with the entry
  BOOST_TEST(run(env, output) == 0, output);
  BOOST_TEST(output.empty(), output);
  auto store = kjit::store::Store::open(config.cache_dir + "/store", 1u << 26);
  BOOST_TEST(store->count(kjit::store::Table::entries) == 0u);
  BOOST_TEST(store->count(kjit::store::Table::quarantine) == 0u);
}

} // namespace

BOOST_FIXTURE_TEST_SUITE(guarantees, CacheFixture)

// Kills: no cross-process compile lock, no store re-check after the lock, no thread single flight.
BOOST_AUTO_TEST_CASE(four_processes_of_four_threads_on_one_cold_key_compile_it_exactly_once)
{
  const std::string file = tmp.path() + "/race.cu";
  write_text(file, small_program("race").source);
  const int processes = 4;
  const int threads = 4;
  const std::vector<std::string> outputs = race(tmp.path(), config.cache_dir, file, processes, threads);
  unsigned long long compiles = 0;
  std::string key;
  for (const std::string& output : outputs) {
    const auto fields = fields_of(output);
    BOOST_TEST((fields.count("result") == 1 && fields.at("result") == "ok"), output);
    compiles += number(fields, "compiles");
    // Single flight: one thread per process reads the store; the others wait for its result.
    BOOST_TEST(number(fields, "misses") + number(fields, "disk_hits") == 1u, output);
    // Every lookup is counted once: the waiting threads as memory hits.
    BOOST_TEST(number(fields, "memory_hits") + number(fields, "disk_hits") + number(fields, "misses") ==
                 static_cast<unsigned long long>(threads),
               output);
    if (key.empty() && fields.count("key") != 0) {
      key = fields.at("key");
    }
    BOOST_TEST((fields.count("key") == 1 && fields.at("key") == key), output);
  }
  BOOST_TEST(compiles == 1u);
  kjit::Cache cache(config);
  BOOST_TEST(cache.disk_entries() == 1u);
}

BOOST_AUTO_TEST_CASE(threads_without_a_disk_tier_compile_one_key_once)
{
  config.disable_cache = true;  // no store, no file lock: only the threads' single flight
  kjit::Cache cache(config);
  const kjit::PreparedProgram prepared = cache.prepare(small_program("flight_memory"), kjit::Arch::parse("sm_90"));
  std::vector<std::thread> threads;
  std::vector<std::shared_ptr<const kjit::Binary>> results(8);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] { results[t] = cache.get(prepared); });
  }
  for (auto& thread : threads) {
    thread.join();
  }
  BOOST_TEST(cache.stats().compiles == 1u);
  BOOST_TEST(cache.stats().misses == 1u);
  for (const auto& result : results) {
    BOOST_TEST(result.get() == results[0].get());
  }
}

// The key names NVRTC's exact build (the "Compiler Build ID" NVRTC writes into every PTX), not
// just its version: two builds of one release compile differently.
BOOST_AUTO_TEST_CASE(the_key_names_nvrtc_s_build_id_and_release)
{
  kjit::Cache cache(config);
  const kjit::PreparedProgram prepared = cache.prepare(small_program("build_id"), kjit::Arch::parse("sm_90"));
  const std::string ptx = cache.get(prepared)->ptx;
  const std::string build = after(ptx, "// Compiler Build ID: ");
  const std::string release = after(ptx, "// Cuda compilation tools, release ");
  BOOST_TEST_REQUIRE(build.rfind("CL-", 0) == 0u, ptx.substr(0, 400));
  BOOST_TEST_REQUIRE(!release.empty(), ptx.substr(0, 400));
  const std::string line = nvrtc_line(prepared.options_txt());
  // "nvrtc: <major.minor> V<version> CL-<build id>" (docs/cache-format.md)
  BOOST_TEST(line.find(" " + build) != std::string::npos, line + " vs " + build);
  const std::string version = release.substr(release.find(", ") + 2);  // "V13.0.48"
  BOOST_TEST(line.find(" " + version + " ") != std::string::npos, line + " vs " + version);
  BOOST_TEST(line.rfind("nvrtc: " + release.substr(0, release.find(',')) + " ", 0) == 0u, line);
}

// An entry made by another NVRTC build (same nvJitLink) is an orphan: listed, then removed.
BOOST_AUTO_TEST_CASE(orphans_are_entries_of_another_nvrtc_build)
{
  check_entries_of_another_toolchain_are_orphans(tmp.path(), config, 0);
}

// An entry made by another nvJitLink (same NVRTC: nvJitLink is often its own package or wheel) is
// an orphan too: its -dlto cubins were linked by the old linker.
BOOST_AUTO_TEST_CASE(orphans_are_entries_of_another_nvjitlink)
{
  check_entries_of_another_toolchain_are_orphans(tmp.path(), config, 1);
}

// The key's "nvjitlink: " line is the version nvJitLinkVersion reports, asked here of the
// toolkit's library directly (before: nothing compared them, and a key without it passed).
BOOST_AUTO_TEST_CASE(the_key_names_nvjitlink_s_version)
{
  const std::string toolkit =
    kjit::current_config().cuda_home.empty() ? "/usr/local/cuda" : kjit::current_config().cuda_home;
  void* library = ::dlopen((toolkit + "/lib64/libnvJitLink.so").c_str(), RTLD_NOW | RTLD_LOCAL);
  BOOST_TEST_REQUIRE(library != nullptr, ::dlerror());
  using Version = int (*)(unsigned*, unsigned*);
  const auto version = reinterpret_cast<Version>(::dlsym(library, "nvJitLinkVersion"));
  BOOST_TEST_REQUIRE(version != nullptr);
  unsigned major = 0;
  unsigned minor = 0;
  BOOST_TEST_REQUIRE(version(&major, &minor) == 0);
  kjit::Cache cache(config);
  const kjit::PreparedProgram prepared = cache.prepare(small_program("nvjitlink_line"), kjit::Arch::parse("sm_90"));
  const std::string expected = std::to_string(major) + "." + std::to_string(minor);
  BOOST_TEST(after(prepared.options_txt(), "\nnvjitlink: ") == expected, prepared.options_txt());
}

// A second process gets the supported archs from the store, without loading NVRTC.
BOOST_AUTO_TEST_CASE(supported_archs_are_remembered_for_a_second_process)
{
  const std::string file = tmp.path() + "/archs.cu";
  write_text(file, small_program("archs").source);
  std::string archs;
  for (int arch : kjit::supported_archs()) {
    archs += (archs.empty() ? "" : " ") + std::to_string(arch);
  }
  BOOST_TEST_REQUIRE(archs.find("90") != std::string::npos, archs);
  const std::string probe = "'" + helper("KJIT_TEST_CACHE_PROBE") + "' '" + config.cache_dir + "' '" + file + "' sm_90";
  std::string output;
  BOOST_TEST_REQUIRE(run(probe, output) == 0, output);
  BOOST_TEST(fields_of(output)["supported_archs"] == archs, output);
  BOOST_TEST_REQUIRE(run(probe, output) == 0, output);
  auto warm = fields_of(output);
  BOOST_TEST(warm["supported_archs"] == archs, output);
  BOOST_TEST(warm["nvrtc_loaded"] == "0", output);
  BOOST_TEST(warm["disk_hits"] == "1", output);
}

// A new store's toolchain rows wait for its first entry's commit; a process that stores no entry
// (an uncached compile: __TIME__) and ends by quick_exit() (no Cache destroyed) still leaves them
// (before: never written, and every later process of that store loaded NVRTC to learn them).
BOOST_AUTO_TEST_CASE(the_toolchain_is_remembered_by_a_process_that_stored_nothing)
{
  const std::string file = tmp.path() + "/time.cu";
  write_text(file, "__global__ void stamped(char* p) { const char t[] = __TIME__; p[0] = t[0]; }\n");
  std::string output;
  const std::string probe = "'" + helper("KJIT_TEST_CACHE_PROBE") + "' '" + config.cache_dir + "' '" + file + "' sm_90";
  BOOST_TEST_REQUIRE(run(probe + " --quick-exit", output) == 0, output);
  BOOST_TEST_REQUIRE(fields_of(output)["compiles"] == "1", output);
  // The versions' row: "toolchain <XXH3 of the libraries' identity>" (not "toolchain context …",
  // which the toolkit headers' fingerprint writes at once).
  std::size_t version_rows = 0;
  kjit::store::Store::open(config.cache_dir + "/store", std::size_t(64) << 20)
    ->for_each(kjit::store::Table::meta, [&](std::string_view key, std::string_view) {
      const std::string_view prefix = kjit::store::k_toolchain_prefix;
      version_rows += key.substr(0, prefix.size()) == prefix && key.size() == prefix.size() + 32;
    });
  BOOST_TEST(version_rows == 1u);  // was 0
}

// Removing a test's folder never changes what a symlink in it points to (a symlink to the
// toolkit's lib/ once left it mode 0700).
BOOST_AUTO_TEST_CASE(removing_a_test_folder_leaves_symlink_targets_alone)
{
  const std::string outside = tmp.path() + "/outside";
  BOOST_TEST_REQUIRE(::mkdir(outside.c_str(), 0755) == 0);
  BOOST_TEST_REQUIRE(::chmod(outside.c_str(), 0755) == 0);
  {
    const TempDir inner;
    BOOST_TEST_REQUIRE(::symlink(outside.c_str(), (inner.path() + "/link").c_str()) == 0);
  }
  struct stat st {};
  BOOST_TEST_REQUIRE(::stat(outside.c_str(), &st) == 0);
  BOOST_TEST((st.st_mode & 07777) == 0755u);
}

BOOST_AUTO_TEST_SUITE_END()
