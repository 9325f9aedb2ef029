// Operating a cache through the API: list, key prefixes, verify, prune, usage, settings, doctor.
#include <boost/test/unit_test.hpp>

#include "fixture.hpp"
#include "write_lock.hpp"

#include "cache/usage_log.hpp"
#include "config/log.hpp"
#include "store/record.hpp"
#include "store/store.hpp"

#include <cmath>
#include <cstdlib>
#include <csignal>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <tuple>
#include <unistd.h>

using namespace kjit::test;

namespace {

std::string raw(const std::string& hex)
{
  std::string out;
  for (std::size_t i = 0; i < hex.size(); i += 2) {
    out += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  }
  return out;
}

// Rewrites the entry `hex` as if it had been created `age` seconds ago.
void make_old(const kjit::Cache& cache, const std::string& hex, std::int64_t age)
{
  auto store = kjit::store::Store::open(cache.store_path(), cache.config().store_map_size);
  const std::string key = raw(hex);
  std::string why;
  auto entry = kjit::store::decode_record(*store->get(kjit::store::Table::entries, key),
                                          kjit::util::digest_of_bytes(key), kjit::store::Sections::all, why);
  BOOST_TEST_REQUIRE(entry.has_value());
  entry->created_unix = static_cast<std::int64_t>(::time(nullptr)) - age;
  store->put(kjit::store::Table::entries, key, kjit::store::encode_record(*entry, kjit::util::digest_of_bytes(key)));
}

} // namespace

BOOST_FIXTURE_TEST_SUITE(inspect, CacheFixture)

BOOST_AUTO_TEST_CASE(entries_are_listed_filtered_and_found_by_key_prefix)
{
  kjit::Cache cache(config);
  const auto a80 = cache.prepare(small_program("a"), kjit::Arch::parse("sm_80"));
  const auto a90 = cache.prepare(small_program("a"), kjit::Arch::parse("sm_90"));
  const auto b90 = cache.prepare(small_program("b"), kjit::Arch::parse("sm_90"));
  for (const auto* p : {&a80, &a90, &b90}) {
    cache.get(*p);
  }
  BOOST_TEST(cache.entries().size() == 3u);
  BOOST_TEST(cache.entries({"small_a.cu", ""}).size() == 2u);
  const auto only = cache.entries({"small_a.cu", "sm_90"});
  BOOST_TEST_REQUIRE(only.size() == 1u);
  BOOST_TEST(only[0].key == a90.key());
  BOOST_TEST(only[0].cubin_bytes > 0u);
  BOOST_TEST(only[0].record_bytes > only[0].cubin_bytes);
  BOOST_TEST(only[0].compile_ms > 0.0);

  BOOST_TEST(cache.resolve_key(a90.key().substr(0, 12)) == a90.key());
  BOOST_TEST(cache.resolve_key(a90.key()) == a90.key());  // a whole key: found by its row
  std::string absent = a90.key();
  absent[63] = absent[63] == '0' ? '1' : '0';
  try {
    cache.resolve_key(absent);
    BOOST_ERROR("a whole key of no entry was resolved");
  } catch (const kjit::Error& e) {
    BOOST_TEST(std::string(e.what()).find("no cache entry") != std::string::npos, e.what());
  }
  const kjit::EntryContents contents = cache.entry(a90.key().substr(0, 10));
  BOOST_TEST(contents.source == small_program("a").source);
  BOOST_TEST(contents.program_txt == a90.program_txt());
  BOOST_TEST(contents.options_txt == a90.options_txt());
  BOOST_TEST(contents.binary.arch == "sm_90");
  BOOST_TEST(!contents.binary.cubin.empty());

  BOOST_CHECK_THROW(cache.resolve_key("zz"), kjit::Error);
  std::string unknown = a90.key().substr(0, 8);
  while (a80.key().rfind(unknown, 0) == 0 || a90.key().rfind(unknown, 0) == 0 || b90.key().rfind(unknown, 0) == 0) {
    unknown[0] = unknown[0] == 'f' ? '0' : static_cast<char>(unknown[0] + 1);
  }
  try {
    cache.resolve_key(unknown);
    BOOST_ERROR("an unknown prefix was resolved");
  } catch (const kjit::Error& e) {
    BOOST_TEST(std::string(e.what()).find("no cache entry") != std::string::npos, e.what());
  }
  // Sixteen hex digits share at most a one-digit prefix among three keys: "" is refused, and a
  // one-digit prefix either matches one entry, several (ambiguous) or none.
  BOOST_CHECK_THROW(cache.resolve_key(""), kjit::Error);
  std::size_t ambiguous = 0;
  for (const char digit : std::string("0123456789abcdef")) {
    try {
      cache.resolve_key(std::string(1, digit));
    } catch (const kjit::Error& e) {
      ambiguous += std::string(e.what()).find("ambiguous") != std::string::npos ? 1 : 0;
    }
  }
  const bool shared = a80.key()[0] == a90.key()[0] || a80.key()[0] == b90.key()[0] || a90.key()[0] == b90.key()[0];
  BOOST_TEST(ambiguous == (shared ? 1u : 0u));
}

BOOST_AUTO_TEST_CASE(verify_finds_a_planted_bad_record_and_repair_moves_it_aside)
{
  kjit::Cache cache(config);
  const auto good = cache.prepare(small_program("good"), kjit::Arch::parse("sm_90"));
  const auto bad = cache.prepare(small_program("bad"), kjit::Arch::parse("sm_90"));
  cache.get(good);
  cache.get(bad);
  cache.flush_mirror();
  BOOST_TEST(cache.verify(kjit::Repair::no).bad.empty());
  auto store = kjit::store::Store::open(cache.store_path(), config.store_map_size);
  std::string bytes = *store->get(kjit::store::Table::entries, raw(bad.key()));
  bytes[bytes.size() - 20] ^= 0x40;  // inside the inputs: only a full decode notices
  store->put(kjit::store::Table::entries, raw(bad.key()), bytes);

  std::size_t calls = 0;
  const kjit::VerifyReport report = cache.verify(kjit::Repair::no, [&calls](std::size_t, std::size_t) { ++calls; });
  BOOST_TEST(report.checked == 2u);
  BOOST_TEST(calls == 2u);
  BOOST_TEST_REQUIRE(report.bad.size() == 1u);
  BOOST_TEST(report.bad[0].first == bad.key());
  BOOST_TEST(cache.disk_entries() == 2u);  // reporting changes nothing
  BOOST_TEST(cache.usage().damaged == 1u);

  const kjit::VerifyReport repaired = cache.verify(kjit::Repair::quarantine);
  BOOST_TEST(repaired.quarantined == 1u);
  BOOST_TEST(cache.disk_entries() == 1u);
  BOOST_TEST(store->count(kjit::store::Table::quarantine) == 1u);
  BOOST_TEST(!exists(config.cache_dir + "/programs/" + bad.key()));
  BOOST_TEST(exists(config.cache_dir + "/programs/" + good.key()));
  BOOST_TEST(cache.verify(kjit::Repair::no).bad.empty());
}

BOOST_AUTO_TEST_CASE(prune_removes_old_entries_and_keeps_to_a_size)
{
  kjit::Cache cache(config);
  std::vector<kjit::PreparedProgram> programs;
  for (const char* tag : {"p1", "p2", "p3"}) {
    programs.push_back(cache.prepare(small_program(tag), kjit::Arch::parse("sm_90")));
    cache.get(programs.back());
  }
  make_old(cache, programs[0].key(), 40 * 86400);
  make_old(cache, programs[1].key(), 2 * 86400);
  BOOST_TEST(cache.prune_older_than(30 * 86400) == 1u);
  BOOST_TEST(cache.disk_entries() == 2u);
  BOOST_TEST(!exists(config.cache_dir + "/programs/" + programs[0].key()));
  BOOST_TEST(cache.entries({"small_p1.cu", ""}).empty());

  const kjit::DiskUsage before = cache.usage();
  BOOST_TEST(before.entries == 2u);
  BOOST_TEST(before.cubin_bytes > 0u);
  BOOST_TEST(before.mirror_bytes > 0u);
  // A byte short of what both entries take (records and their mirror folders, not the mirror's
  // shared index.txt, headers/ and folder, which no removal frees): the least recently used (p2,
  // created earlier and never used since) goes.
  std::size_t shared = 0;
  for (const char* name : {"", "/headers", "/index.txt"}) {
    struct stat st {};
    if (::stat((config.cache_dir + "/programs" + name).c_str(), &st) == 0) {
      shared += static_cast<std::size_t>(st.st_blocks) * 512;
    }
  }
  const std::size_t both = before.record_bytes + before.mirror_bytes - shared;
  BOOST_TEST(cache.prune_to_size(both - 1) == 1u);
  BOOST_TEST(cache.entries({"small_p2.cu", ""}).empty());
  BOOST_TEST(cache.entries({"small_p3.cu", ""}).size() == 1u);
  BOOST_TEST(cache.prune_to_size(both) == 0u);

  BOOST_TEST(cache.remove_mirror());
  BOOST_TEST(!exists(config.cache_dir + "/programs"));
  BOOST_TEST(!cache.remove_mirror());
  BOOST_TEST(cache.rebuild_mirror() == 1u);
}

BOOST_AUTO_TEST_CASE(lookup_counts_are_summed_across_caches_and_processes)
{
  const kjit::Program program = small_program("counted");
  {
    kjit::Cache first(config);
    first.get(program, kjit::Arch::parse("sm_90"));  // miss, compile
  }
  {
    kjit::Cache second(config);
    second.get(program, kjit::Arch::parse("sm_90"));  // disk hit
    second.get(program, kjit::Arch::parse("sm_90"));  // disk hit: now kept in the memory tier
    second.get(program, kjit::Arch::parse("sm_90"));  // memory hit
  }
  { kjit::Cache idle(config); }  // no lookup: no line
  kjit::Cache cache(config);
  const kjit::DiskUsage usage = cache.usage();
  BOOST_TEST(usage.processes == 2u);
  BOOST_TEST(usage.misses == 1u);
  BOOST_TEST(usage.compiles == 1u);
  BOOST_TEST(usage.disk_hits == 2u);
  BOOST_TEST(usage.memory_hits == 1u);
  BOOST_TEST(usage.compile_ms_saved > 0.0);
  BOOST_TEST(usage.compile_ms_spent > 0.0);

  // Thousands of processes: the log is summed into one line now and then, never losing counts.
  kjit::CacheStats one;
  one.disk_hits = 2;
  one.misses = 1;
  for (int i = 0; i < 3000; ++i) {
    kjit::cache::append_usage(config.cache_dir, one, false);
  }
  const kjit::DiskUsage many = cache.usage();
  BOOST_TEST(many.processes == 3002u);
  BOOST_TEST(many.disk_hits == 6002u);
  BOOST_TEST(many.misses == 3001u);
  BOOST_TEST(read_text(config.cache_dir + "/usage.log").size() < 80u * 1024u);

  cache.zero_usage();
  BOOST_TEST(cache.usage().processes == 0u);
  BOOST_TEST(cache.usage().misses == 0u);
}

// Compiles that are not cached are counted by reason (issue 36: a refusal is a cost users pay on
// every call, and `kjit stats` shows it): in the Cache's stats, in the usage log, in `kjit stats`.
BOOST_AUTO_TEST_CASE(uncached_compiles_are_counted_by_reason)
{
  const std::string d = tmp.path() + "/refused";
  put(d + "/time.cu", "extern \"C\" __global__ void k(char* o) { *o = __TIME__[7]; }\n");
  put(d + "/formed.cu", "#define EMPTY\n#define H <EMPTY" + d + "/abs.h>\n#include H\n"
                        "extern \"C\" __global__ void k(int* o) { *o = V; }\n");
  put(d + "/abs.h", "#define V 3\n");
  settle();
  {
    kjit::Cache cache(config);
    for (int round = 0; round < 2; ++round) {
      for (const char* name : {"/time.cu", "/formed.cu"}) {
        BOOST_TEST(kjit::to_string(cache.lookup(kjit::program_from_file(d + name), kjit::Arch::parse("sm_90")).source) ==
                   std::string("compiled"));
      }
    }
    BOOST_TEST(cache.stats().uncached_time == 2u);
    BOOST_TEST(cache.stats().uncached_formed_name == 2u);
    BOOST_TEST(cache.stats().uncached_probe == 0u);
    BOOST_TEST(cache.stats().compiles == 4u);
  }
  kjit::Cache cache(config);
  BOOST_TEST(cache.usage().uncached_time == 2u);
  BOOST_TEST(cache.usage().uncached_formed_name == 2u);
  std::string binaries = helper("KJIT_TEST_BINARIES");
  const std::string kjit = binaries.substr(binaries.find(' ') + 1);
  std::string output;
  BOOST_TEST(run("KJIT_CACHE_DIR='" + config.cache_dir + "' '" + kjit + "' stats", output) == 0, output);
  BOOST_TEST(output.find("\nnot cached: 4 compiles (formed name 2, time 2);") != std::string::npos, output);
  BOOST_TEST(run("KJIT_CACHE_DIR='" + config.cache_dir + "' '" + kjit + "' stats --json", output) == 0, output);
  BOOST_TEST(output.find("\"uncached_compiles\": 4, \"uncached_by_reason\": {\"formed_name\": 2, \"disk_name\": 0, "
                         "\"time\": 2,") != std::string::npos,
             output);
}

// A host under a file-size limit (ulimit -f) below the usage log's size is not killed by SIGXFSZ
// when its Cache appends its line as it goes (at exit, for the default cache): the line is lost
// (counts are best effort). Before, the append ended the process.
BOOST_AUTO_TEST_CASE(a_usage_log_past_the_file_size_limit_is_not_a_signal)
{
  const kjit::Arch arch = kjit::Arch::parse("sm_90");
  {
    kjit::Cache cache(config);
    BOOST_TEST_REQUIRE(cache.get(small_program("usage_limit"), arch) != nullptr);
  }
  const std::string log = config.cache_dir + "/usage.log";
  const std::size_t size = read_text(log).size();
  BOOST_TEST_REQUIRE(size > 16u);
  const pid_t child = ::fork();
  BOOST_TEST_REQUIRE(child >= 0);
  if (child == 0) {
    limit_file_size_in_child(16);
    {
      kjit::Cache cache(config);
      std::ignore = cache.get(small_program("usage_limit"), arch);  // a hit, logged when it goes
    }
    ::_exit(0);
  }
  const int status = wait_status(child);
  BOOST_TEST((WIFEXITED(status) && WEXITSTATUS(status) == 0), status_text(status));
  BOOST_TEST(read_text(log).size() == size);
}

// kjit's log lines go to stderr, which a host may send to a file under its ulimit -f: a line past
// the limit is lost, not the host (SIGXFSZ). Found when the test above died with its output sent to
// a file: its Cache's warning about the last-use rows it could not write killed it.
BOOST_AUTO_TEST_CASE(a_log_line_into_a_stderr_file_past_the_limit_is_not_a_signal)
{
  const std::string file = tmp.path() + "/stderr.txt";
  const pid_t child = ::fork();
  BOOST_TEST_REQUIRE(child >= 0);
  if (child == 0) {
    const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0 || ::dup2(fd, 2) != 2) {
      ::_exit(3);
    }
    limit_file_size_in_child(16);
    kjit::log::line("a line longer than the sixteen bytes the limit allows");
    ::_exit(0);
  }
  const int status = wait_status(child);
  BOOST_TEST((WIFEXITED(status) && WEXITSTATUS(status) == 0), status_text(status));
  BOOST_TEST(read_text(file).size() <= 16u);
}

// The usage line is formatted without printf (src/cache/usage_log.cpp); it must stay the line
// "kjit-usage 3 %llu … %.3f %.3f\n" that `kjit stats` reads (version 2 lines of older kjit too).
BOOST_AUTO_TEST_CASE(usage_lines_are_the_printf_format)
{
  kjit::UsageTotals t;
  t.processes = 1;
  t.memory_hits = 0;
  t.disk_hits = 18446744073709551615u;
  t.bundle_hits = 10;
  t.misses = 99;
  t.compiles = 1000;
  t.remote_hits = 7;
  t.remote_misses = 123456789;
  t.remote_errors = 3;
  t.remote_bytes_read = 4096;
  t.remote_bytes_written = 1u << 31;
  t.uncached_formed_name = 1;
  t.uncached_disk_name = 2;
  t.uncached_time = 30;
  t.uncached_file_option = 400;
  t.uncached_probe = 5;
  t.uncached_names_file = 6;
  t.uncached_environment = 7;
  for (const double ms : {0.0, 0.0004, 0.0016, 0.25, 1.5, 9.9996, 47.123456, 1234.5678, 99999.9994, 3.6e9, 2e12,
                          -1.0}) {
    t.compile_ms_saved = ms;
    t.compile_ms_spent = ms * 3;
    char expected[400];
    std::snprintf(expected, sizeof expected,
                  "kjit-usage 3 %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu 1 2 30 400 5 6 7 %.3f %.3f\n",
                  static_cast<unsigned long long>(t.processes), static_cast<unsigned long long>(t.memory_hits),
                  static_cast<unsigned long long>(t.disk_hits), static_cast<unsigned long long>(t.bundle_hits),
                  static_cast<unsigned long long>(t.misses), static_cast<unsigned long long>(t.compiles),
                  static_cast<unsigned long long>(t.remote_hits), static_cast<unsigned long long>(t.remote_misses),
                  static_cast<unsigned long long>(t.remote_errors),
                  static_cast<unsigned long long>(t.remote_bytes_read),
                  static_cast<unsigned long long>(t.remote_bytes_written), t.compile_ms_saved, t.compile_ms_spent);
    BOOST_TEST(kjit::cache::usage_line(t) == std::string(expected), ms);
  }
}

// Times on a rounding boundary: printf rounds the exact value, ties to even. The hand-made line
// rounded ms * 1000 as a double, then half away from zero: 1.0005 gave "1.001", 0.0625 "0.063"
// (≈ half of all times that end in 500 ns were one thousandth off).
BOOST_AUTO_TEST_CASE(usage_line_times_round_as_printf_does)
{
  kjit::UsageTotals t;
  const auto printed = [](const kjit::UsageTotals& u) {
    char text[400];
    std::snprintf(text, sizeof text, "kjit-usage 3 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 %.3f %.3f\n", u.compile_ms_saved,
                  u.compile_ms_spent);
    return std::string(text);
  };
  for (const double ms : {0.0625, 0.3125, 1.0005, 230866.5415, 603117363553.0494}) {
    t.compile_ms_saved = ms;
    BOOST_TEST(kjit::cache::usage_line(t) == printed(t), ms);
  }
  int differ = 0;
  for (std::uint64_t ns = 500; ns < 2000000000u; ns += 999000) {  // x.xxx5 ms: a time of N ns is N / 1e6
    t.compile_ms_saved = static_cast<double>(ns) / 1e6;
    differ += kjit::cache::usage_line(t) != printed(t) ? 1 : 0;
  }
  for (double base = 1e-3; base < 1e12; base *= 1.37) {  // the doubles beside x.xxx5, up to 1e12 ms
    double ms = std::nextafter(std::floor(base * 1000) / 1000 + 0.0005, 0.0);
    for (int i = 0; i < 3; ++i, ms = std::nextafter(ms, 1e13)) {
      t.compile_ms_saved = ms;
      differ += kjit::cache::usage_line(t) != printed(t) ? 1 : 0;
    }
  }
  std::uint64_t seed = 1;
  for (int i = 0; i < 200000; ++i) {  // any time below 1e6 ms
    seed = seed * 6364136223846793005u + 1442695040888963407u;
    t.compile_ms_saved = static_cast<double>(seed >> 11) / 9007199254740992.0 * 1e6;
    differ += kjit::cache::usage_line(t) != printed(t) ? 1 : 0;
  }
  BOOST_TEST(differ == 0);
}

BOOST_AUTO_TEST_CASE(setting_values_say_where_each_value_came_from)
{
  ::setenv("KJIT_MEMORY_LIMIT", "64MiB", 1);
  kjit::option::arch("sm_80");
  const auto values = kjit::setting_values();
  ::unsetenv("KJIT_MEMORY_LIMIT");
  kjit::option::reset();
  std::map<std::string, kjit::SettingValue> by_name;
  for (const auto& v : values) {
    by_name[v.name] = v;
  }
  BOOST_TEST(by_name.size() == kjit::settings().size());
  BOOST_TEST(by_name["memory_limit"].source == "environment");
  BOOST_TEST(by_name["memory_limit"].value == "64MiB");
  BOOST_TEST(by_name["arch"].source == "api");
  BOOST_TEST(by_name["arch"].value == "sm_80");
  BOOST_TEST(by_name["mirror"].source == "default");
  BOOST_TEST(by_name["bundle"].variable == "KJIT_BUNDLE");

  // A password inside a URL is never shown.
  ::setenv("KJIT_BUNDLE", "/mnt/redis://reader:hunter2@cache.example/kernels.kjitpack", 1);
  const auto redacted = kjit::setting_values();
  ::unsetenv("KJIT_BUNDLE");
  for (const auto& v : redacted) {
    BOOST_TEST(v.value.find("hunter2") == std::string::npos, v.name);
    if (v.name == "bundle") {
      BOOST_TEST(v.value.find("reader:***@cache.example") != std::string::npos, v.value);
    }
  }
}

BOOST_AUTO_TEST_CASE(diagnose_reports_a_damaged_store_and_never_creates_the_folder)
{
  kjit::Config missing = config;
  missing.cache_dir = tmp.path() + "/not-yet";
  bool warned = false;
  for (const auto& check : kjit::diagnose(missing)) {
    warned |= check.what == "cache folder" && check.status == kjit::HealthCheck::Status::warning;
  }
  BOOST_TEST(warned);
  BOOST_TEST(!exists(missing.cache_dir));

  kjit::Cache cache(config);
  const auto prepared = cache.prepare(small_program("doctor"), kjit::Arch::parse("sm_90"));
  cache.get(prepared);
  auto store = kjit::store::Store::open(cache.store_path(), config.store_map_size);
  store->put(kjit::store::Table::entries, raw(prepared.key()), "garbage");
  bool store_error = false;
  for (const auto& check : kjit::diagnose(config)) {
    store_error |= check.what == "store" && check.status == kjit::HealthCheck::Status::error;
  }
  BOOST_TEST(store_error);
}

// Records an older (or newer) kjit wrote are not damage: after an upgrade, doctor warns and counts
// them apart; a damaged record beside them is still an error.
BOOST_AUTO_TEST_CASE(diagnose_counts_records_of_another_format_apart_from_damage)
{
  kjit::Cache cache(config);
  const auto old_one = cache.prepare(small_program("older"), kjit::Arch::parse("sm_90"));
  const auto current = cache.prepare(small_program("current"), kjit::Arch::parse("sm_90"));
  cache.get(old_one);
  cache.get(current);
  cache.flush_mirror();
  auto store = kjit::store::Store::open(cache.store_path(), config.store_map_size);
  std::string bytes = *store->get(kjit::store::Table::entries, raw(old_one.key()));
  const std::uint32_t older = kjit::store::k_record_format - 1;
  std::memcpy(&bytes[8], &older, sizeof older);  // the format field of the record's header
  store->put(kjit::store::Table::entries, raw(old_one.key()), bytes);

  const auto store_check = [this] {
    for (const auto& check : kjit::diagnose(config)) {
      if (check.what == "store") {
        return check;
      }
    }
    return kjit::HealthCheck{};
  };
  const kjit::HealthCheck upgraded = store_check();
  BOOST_TEST((upgraded.status == kjit::HealthCheck::Status::warning));
  BOOST_TEST(upgraded.detail.find("0 damaged, 1 written by another kjit version") != std::string::npos, upgraded.detail);

  store->put(kjit::store::Table::entries, raw(current.key()), "garbage");
  const kjit::HealthCheck damaged = store_check();
  BOOST_TEST((damaged.status == kjit::HealthCheck::Status::error));
  BOOST_TEST(damaged.detail.find("1 damaged, 1 written by another kjit version") != std::string::npos, damaged.detail);
}

BOOST_AUTO_TEST_SUITE_END()
