// Dispatch tables: chosen by a cost function or a timer, persisted and read back by other
// processes, re-tuned under another fingerprint, "*" matching, concurrent tuners tuning once.
#include <boost/test/unit_test.hpp>

#include "script_samples.hpp"

#include <kjit/script.hpp>

#include "store/script_record.hpp"
#include "store/script_store.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <sstream>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <tuple>
#include <unistd.h>

using kjit::test::CacheFixture;
using kjit::test::macro_script;
using kjit::test::test_batch;

namespace {

// script_probe's "key: value" lines.
std::map<std::string, std::string> probe(const std::string& cache_dir, const std::string& gpu, std::uint64_t size,
                                         const std::string& extra = "", const std::string& cwd = ".")
{
  std::string output;
  const std::string command = "cd '" + cwd + "' && KJIT_TEST_WORKER='" + kjit::test::helper("KJIT_TEST_WORKER") + "' '" +
                              kjit::test::helper("KJIT_TEST_SCRIPT_PROBE") + "' '" + cache_dir + "' '" + gpu + "' " +
                              std::to_string(size) + " " + extra;
  const int status = kjit::test::run(command, output);
  BOOST_TEST(status == 0, command << " exited " << status);
  std::map<std::string, std::string> values;
  std::istringstream in(output);
  std::string line;
  while (std::getline(in, line)) {
    const auto colon = line.find(": ");
    if (colon != std::string::npos) {
      values[line.substr(0, colon)] = line.substr(colon + 2);
    }
  }
  return values;
}

// The config of a cache whose store this process can't write (opened for inspection), the
// script's tables and programs stored first through a writable Cache.
kjit::Config read_only_after_build(const kjit::Config& config)
{
  {
    kjit::Cache cache(config);
    std::ignore = macro_script().build(cache, test_batch());
  }
  kjit::Config read_only = config;
  read_only.inspect_only = true;
  return read_only;
}

} // namespace

BOOST_FIXTURE_TEST_SUITE(script_tables, CacheFixture)

// A row's programs digest is the same in every process building the same programs: a script with
// a header on the include path and an in-memory one, tuned by one process, is served to the next
// ones (not tuned again by each), and tuned again once the header changes.
BOOST_AUTO_TEST_CASE(a_row_over_programs_with_headers_is_served_to_other_processes)
{
  const std::string include = tmp.path() + "/include";
  kjit::test::put(include + "/probe.cuh", "#define PROBE 1\n");
  const std::string with = "--include '" + include + "'";
  auto first = probe(config.cache_dir, "gpu-a", 500, with);
  BOOST_TEST(first["choice"] == "1");
  BOOST_TEST(first["cost_calls"] == "3");
  for (int i = 0; i < 2; ++i) {
    auto again = probe(config.cache_dir, "gpu-a", 510, with);
    BOOST_TEST(again["choice"] == "1");
    BOOST_TEST(again["cost_calls"] == "0");
  }
  kjit::test::settle();
  kjit::test::put(include + "/probe.cuh", "#define PROBE 2\n");
  auto edited = probe(config.cache_dir, "gpu-a", 510, with);
  BOOST_TEST(edited["cost_calls"] == "3");
  auto after = probe(config.cache_dir, "gpu-a", 500, with);
  BOOST_TEST(after["cost_calls"] == "0");
}

// -lineinfo puts the working directory in the programs' keys (named-from): processes working in
// two folders build the same programs but for the folder their line tables name. The rows do not
// depend on it. (Before, each process tuned the key again, every run, for ever: the digest was made
// of the program keys.)
BOOST_AUTO_TEST_CASE(a_row_is_served_to_processes_working_in_other_folders)
{
  const std::string a = tmp.path() + "/a";
  const std::string b = tmp.path() + "/b";
  kjit::test::put(a + "/.keep", "");
  kjit::test::put(b + "/.keep", "");
  auto first = probe(config.cache_dir, "gpu-a", 500, "--option -lineinfo", a);
  BOOST_TEST(first["cost_calls"] == "3");
  for (const std::string& dir : {b, a, b}) {
    auto again = probe(config.cache_dir, "gpu-a", 510, "--option -lineinfo", dir);
    BOOST_TEST(again["choice"] == "1");
    BOOST_TEST(again["cost_calls"] == "0", "in " << dir);
  }
}

BOOST_AUTO_TEST_CASE(a_cost_table_is_persisted_and_read_back_by_another_process)
{
  // Key 512: BLOCK nearest 512 / 8 = 64 is schedule 1; key 1024 → 128 is schedule 2.
  auto first = probe(config.cache_dir, "gpu-a", 500);
  BOOST_TEST(first["choice"] == "1");
  BOOST_TEST(first["cost_calls"] == "3");
  auto second = probe(config.cache_dir, "gpu-a", 510);  // same key (512)
  BOOST_TEST(second["choice"] == "1");
  BOOST_TEST(second["cost_calls"] == "0");  // read from the store, not tuned again
  BOOST_TEST(second["hash"] == first["hash"]);
  auto other_key = probe(config.cache_dir, "gpu-a", 1000);
  BOOST_TEST(other_key["choice"] == "2");
  BOOST_TEST(other_key["cost_calls"] == "3");
  // This process sees both rows, made elsewhere.
  kjit::Cache cache(config);
  const auto scripts = kjit::stored_scripts(cache);
  BOOST_TEST_REQUIRE(scripts.size() == 1u);
  BOOST_TEST_REQUIRE(scripts[0].table.size() == 2u);
  BOOST_TEST(scripts[0].table[0].key == std::vector<std::uint64_t>{512});
  BOOST_TEST(scripts[0].table[0].choice == 1u);
  BOOST_TEST(scripts[0].table[0].how == "cost");
  BOOST_TEST(scripts[0].table[1].key == std::vector<std::uint64_t>{1024});
  BOOST_TEST(scripts[0].fingerprint.gpu == "gpu-a");
}

BOOST_AUTO_TEST_CASE(a_table_made_under_another_fingerprint_is_tuned_again)
{
  BOOST_TEST(probe(config.cache_dir, "gpu-a", 500)["cost_calls"] == "3");
  BOOST_TEST(probe(config.cache_dir, "gpu-b", 500)["cost_calls"] == "3");  // made elsewhere: ignored
  BOOST_TEST(probe(config.cache_dir, "gpu-b", 500)["cost_calls"] == "0");  // now this machine's
  kjit::Cache cache(config);
  BOOST_TEST(kjit::stored_scripts(cache).at(0).fingerprint.gpu == "gpu-b");
}

BOOST_AUTO_TEST_CASE(a_star_in_the_saved_fingerprint_matches_any_machine)
{
  const std::string hash = probe(config.cache_dir, "gpu-a", 8)["hash"];  // builds the script
  {
    kjit::Cache cache(config);
    kjit::Script script = macro_script();
    script.name = "ProbeScript";
    script.source = "extern \"C\" __global__ void probe(int* p) { p[threadIdx.x] = BLOCK; }\n";
    kjit::BuiltScript built = script.build(cache, test_batch());
    BOOST_TEST_REQUIRE(built.hash() == hash);
    kjit::Fingerprint everywhere = kjit::current_fingerprint(built.arch());
    everywhere.gpu = "*";
    everywhere.compute_capability = "*";
    built.set_table({{{512}, 0, "", {}}}, everywhere);  // the cost function would pick 1
  }
  auto got = probe(config.cache_dir, "gpu-z", 500);
  BOOST_TEST(got["choice"] == "0");
  BOOST_TEST(got["cost_calls"] == "0");
}

BOOST_AUTO_TEST_CASE(concurrent_tuners_of_one_key_tune_once)
{
  probe(config.cache_dir, "gpu-a", 1);  // builds the script (and tunes key 1)
  std::string output;
  // The three start tuning together (a barrier after the build) and each cost call takes 150 ms:
  // without the cross-process lock each would cost the three schedules (9 calls).
  const std::string barrier = tmp.path() + "/barrier";
  BOOST_TEST_REQUIRE(::mkdir(barrier.c_str(), 0700) == 0);
  const std::string one = "KJIT_TEST_WORKER='" + kjit::test::helper("KJIT_TEST_WORKER") + "' '" +
                          kjit::test::helper("KJIT_TEST_SCRIPT_PROBE") + "' '" + config.cache_dir +
                          "' gpu-a 1000 --sleep-ms 150 --barrier '" + barrier + "' --parties 3";
  const int status = kjit::test::run("(" + one + " & " + one + " & " + one + " & wait) 2>&1", output);
  BOOST_TEST(status == 0);
  std::size_t calls = 0;
  std::size_t choices = 0;
  std::istringstream in(output);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("cost_calls: ", 0) == 0) {
      calls += std::stoul(line.substr(12));
    } else if (line == "choice: 2") {
      ++choices;
    }
  }
  BOOST_TEST(choices == 3u, output);
  BOOST_TEST(calls == 3u, output);  // one process costed the three schedules; the others read its row
}

BOOST_AUTO_TEST_CASE(a_timer_picks_the_lowest_median_after_warm_up)
{
  kjit::Cache cache(config);
  kjit::BuiltScript built = macro_script().build(cache, test_batch());
  std::map<std::size_t, int> runs;
  kjit::TuningOptions tuning;
  tuning.warmup = 1;
  tuning.repeat = 3;
  // Schedule 0 has one fast outlier (the median ignores it); schedule 2 is steadily fastest.
  tuning.timer = [&](const kjit::TimingRun& run) {
    BOOST_TEST(!run.binary.cubin.empty());
    const int n = runs[run.schedule.index]++;
    if (run.schedule.index == 0) {
      return n == 2 ? 0.1 : 5.0;
    }
    return run.schedule.index == 1 ? 4.0 : 3.0;
  };
  built.set_tuning(tuning);
  BOOST_TEST(built.choose({4096}) == 2u);
  BOOST_TEST(runs[0] == 4);  // 1 warm-up + 3 timed
  BOOST_TEST(runs[2] == 4);
  const auto table = built.table();
  BOOST_TEST_REQUIRE(table.size() == 1u);
  BOOST_TEST(table[0].how == "timed");
  BOOST_TEST_REQUIRE(table[0].measured.size() == 3u);
  BOOST_TEST(table[0].measured[0].first == 2u);
  BOOST_TEST(table[0].measured[2].first == 0u);
  BOOST_TEST(table[0].measured[2].second == 5.0);
  BOOST_TEST(built.choose({4000}) == 2u);  // same key: no more runs
  BOOST_TEST(runs[2] == 4);
}

BOOST_AUTO_TEST_CASE(a_damaged_table_record_reads_as_none_and_is_tuned_again)
{
  kjit::Cache cache(config);
  kjit::BuiltScript built = macro_script().build(cache, test_batch());
  built.set_table({{{64}, 2, "", {}}}, kjit::current_fingerprint(built.arch()));
  const auto store = kjit::script::store_of(cache);
  BOOST_TEST_REQUIRE(store != nullptr);
  const std::string key = kjit::script::table_row(built.hash());
  std::string bytes = store->get(kjit::store::Table::meta, key).value();
  BOOST_TEST_REQUIRE(kjit::script::decode_table(bytes).has_value());
  BOOST_TEST(kjit::script::decode_table(bytes)->entries.at(0).choice == 2u);
  for (std::size_t i = 0; i < bytes.size(); ++i) {  // magic, version, checksum and body alike
    std::string damaged = bytes;
    damaged[i] = static_cast<char>(damaged[i] ^ 0x20);
    BOOST_TEST(!kjit::script::decode_table(damaged).has_value(), "byte " << i);
  }
  BOOST_TEST(!kjit::script::decode_table(bytes.substr(0, bytes.size() - 1)).has_value());
  bytes[bytes.size() - 3] = static_cast<char>(bytes[bytes.size() - 3] ^ 1);
  store->put(kjit::store::Table::meta, key, bytes);  // a valid meta row holding a damaged record
  kjit::TuningOptions tuning;
  tuning.cost = [](const kjit::ScheduleInfo& s, const std::vector<std::uint64_t>&) { return double(s.index); };
  built.set_tuning(tuning);
  BOOST_TEST(built.choose({64}) == 0u);  // no usable row: tuned again by the cost function
  BOOST_TEST(built.table().at(0).how == "cost");
}

// The script hash does not cover headers found on the include path (nor the toolkit): a stored
// row may name a schedule that no longer builds. It is not served (before: choose() returned it
// and dispatch() a null binary); the key is tuned again among the schedules that built.
BOOST_AUTO_TEST_CASE(a_stored_row_naming_a_schedule_that_no_longer_builds_is_tuned_again)
{
  const std::string include = tmp.path() + "/include";
  kjit::test::put(include + "/limits.cuh", "#define BLOCK_LIMIT 1024\n");
  kjit::Script script = macro_script();
  script.source = "#include \"limits.cuh\"\nstatic_assert(BLOCK < BLOCK_LIMIT, \"too large\");\n" + script.source;
  script.options = {"-I" + include};
  std::string hash;
  {
    kjit::Cache cache(config);
    kjit::BuiltScript built = script.build(cache, test_batch());
    hash = built.hash();
    built.set_table({{{512}, 2, "", {}}}, kjit::current_fingerprint(built.arch()));  // BLOCK 128
    BOOST_TEST(built.choose({500}) == 2u);
  }
  kjit::test::settle();
  kjit::test::put(include + "/limits.cuh", "#define BLOCK_LIMIT 100\n");  // BLOCK 128 no longer builds
  kjit::Cache cache(config);
  kjit::BuiltScript built = script.build(cache, test_batch());
  BOOST_TEST_REQUIRE(built.hash() == hash);
  BOOST_TEST_REQUIRE(!built.schedules()[2].built);
  kjit::TuningOptions tuning;
  tuning.cost = [](const kjit::ScheduleInfo& schedule, const std::vector<std::uint64_t>&) {
    return schedule.index == 1 ? 1.0 : 2.0;
  };
  built.set_tuning(tuning);
  BOOST_TEST(built.choose({500}) == 1u);
  BOOST_TEST(built.dispatch({500}) != nullptr);
  const auto table = built.table();
  BOOST_TEST_REQUIRE(table.size() == 1u);  // the row replaced, not doubled
  BOOST_TEST(table[0].choice == 1u);
}

// A row chosen when fewer schedules built (a header on the include path, outside the script
// hash, broke them) must not be served once more build: here only BLOCK 32 built, the row was
// "single"; the header fixed, the cost model prefers BLOCK 128.
BOOST_AUTO_TEST_CASE(a_row_chosen_among_fewer_schedules_than_now_build_is_tuned_again)
{
  const std::string include = tmp.path() + "/include";
  kjit::test::put(include + "/limits.cuh", "#define BLOCK_LIMIT 40\n");
  kjit::Script script = macro_script();
  script.source = "#include \"limits.cuh\"\nstatic_assert(BLOCK < BLOCK_LIMIT, \"too large\");\n" + script.source;
  script.options = {"-I" + include};
  kjit::TuningOptions tuning;
  tuning.cost = [](const kjit::ScheduleInfo& schedule, const std::vector<std::uint64_t>&) {
    return 10.0 - double(schedule.index);
  };
  std::string hash;
  {
    kjit::Cache cache(config);
    kjit::BuiltScript built = script.build(cache, test_batch());
    hash = built.hash();
    BOOST_TEST_REQUIRE(built.schedules()[0].built);
    BOOST_TEST_REQUIRE(!built.schedules()[2].built);
    built.set_tuning(tuning);
    BOOST_TEST(built.choose({500}) == 0u);
    BOOST_TEST(built.table().at(0).how == "single");
  }
  kjit::test::settle();
  kjit::test::put(include + "/limits.cuh", "#define BLOCK_LIMIT 1024\n");
  kjit::Cache cache(config);
  kjit::BuiltScript built = script.build(cache, test_batch());
  BOOST_TEST_REQUIRE(built.hash() == hash);
  BOOST_TEST_REQUIRE(built.schedules()[2].built);
  built.set_tuning(tuning);
  BOOST_TEST(built.choose({500}) == 2u);
  const auto table = built.table();
  BOOST_TEST_REQUIRE(table.size() == 1u);
  BOOST_TEST(table[0].how == "cost");
}


// The script hash leaves out headers found on the include path: a header edit makes other
// programs under the same hash, every schedule still building. A row timed on the old programs
// is not served for the new ones; the key is timed again. (Before, the old row served.)
BOOST_AUTO_TEST_CASE(a_row_chosen_for_other_programs_of_the_schedules_is_tuned_again)
{
  const std::string include = tmp.path() + "/include";
  kjit::test::put(include + "/scale.cuh", "#define SCALE 1\n");
  kjit::Script script = macro_script();
  script.source = "#include \"scale.cuh\"\n" + script.source;
  script.source.replace(script.source.find("= BLOCK;"), 8, "= BLOCK * SCALE;");
  script.options = {"-I" + include};
  std::size_t fastest = 0;  // what the timer measures, as the programs of this build run
  int runs = 0;
  kjit::TuningOptions tuning;
  tuning.warmup = 0;
  tuning.repeat = 1;
  tuning.timer = [&](const kjit::TimingRun& run) {
    ++runs;
    return run.schedule.index == fastest ? 1.0 : 2.0;
  };
  std::string hash;
  std::vector<std::string> keys;
  {
    kjit::Cache cache(config);
    kjit::BuiltScript built = script.build(cache, test_batch());
    hash = built.hash();
    for (const auto& s : built.schedules()) {
      keys.push_back(s.program_key);
    }
    built.set_tuning(tuning);
    BOOST_TEST(built.choose({500}) == 0u);
  }
  kjit::test::settle();
  kjit::test::put(include + "/scale.cuh", "#define SCALE 3\n");  // other programs: schedule 2 is fastest now
  fastest = 2;
  runs = 0;
  kjit::Cache cache(config);
  kjit::BuiltScript built = script.build(cache, test_batch());
  BOOST_TEST_REQUIRE(built.hash() == hash);
  for (const auto& s : built.schedules()) {
    BOOST_TEST_REQUIRE(s.built);
    BOOST_TEST(s.program_key != keys[s.index]);
  }
  built.set_tuning(tuning);
  BOOST_TEST(built.choose({500}) == 2u);
  BOOST_TEST(runs == 3);
  const auto table = built.table();
  BOOST_TEST_REQUIRE(table.size() == 1u);  // the row replaced
  BOOST_TEST(table[0].choice == 2u);
  BOOST_TEST(built.choose({510}) == 2u);   // and served from then on
  BOOST_TEST(runs == 3);
}

// Rows stored by another tuner while this one measured (its lock wait ran out: here a second
// BuiltScript of the script sets a table from inside the cost function) are kept: the tuner reads
// the table again before it adds its row. (Before, it wrote the table it had read before measuring,
// and the given rows were lost.)
BOOST_AUTO_TEST_CASE(rows_stored_while_a_key_was_tuned_are_kept)
{
  kjit::Cache cache(config);
  kjit::BuiltScript built = macro_script().build(cache, test_batch());
  kjit::BuiltScript other = macro_script().build(cache, test_batch());  // its own state, as another process's
  const kjit::Fingerprint here = kjit::current_fingerprint(built.arch());
  kjit::TuningOptions quick;
  quick.lock_timeout_s = 0;  // the tuner holds the lock: set_table waits for nothing
  other.set_tuning(quick);
  bool set = false;
  kjit::TuningOptions tuning;
  tuning.cost = [&](const kjit::ScheduleInfo& s, const std::vector<std::uint64_t>&) {
    if (!set) {
      set = true;
      other.set_table({{{64}, 2, "", {}}, {{128}, 1, "", {}}}, here);
    }
    return double(s.index);
  };
  built.set_tuning(tuning);
  BOOST_TEST(built.choose({1000}) == 0u);
  BOOST_TEST_REQUIRE(set);
  const auto table = built.table();
  BOOST_TEST_REQUIRE(table.size() == 3u);
  BOOST_TEST(table[0].key == std::vector<std::uint64_t>{64});
  BOOST_TEST(table[0].how == "given");
  BOOST_TEST(table[1].key == std::vector<std::uint64_t>{128});
  BOOST_TEST(table[2].key == std::vector<std::uint64_t>{1024});
  BOOST_TEST(table[2].how == "cost");
  BOOST_TEST(other.choose({64}) == 2u);
  BOOST_TEST(built.choose({128}) == 1u);
}

// A store this process can't write (here opened for inspection) keeps no row: the rows tuned here
// live in memory, and a miss that reads the stored table again must not drop them. (Before, each
// miss dropped them: keys 512 and 8192 taken in turn were tuned again on every call, 24 costs.)
BOOST_AUTO_TEST_CASE(rows_tuned_over_a_read_only_store_are_kept_in_memory)
{
  kjit::Cache cache(read_only_after_build(config));
  kjit::BuiltScript built = macro_script().build(cache, test_batch());
  BOOST_TEST_REQUIRE(!kjit::script::store_of(cache)->writable());
  int calls = 0;
  kjit::TuningOptions tuning;
  tuning.cost = [&](const kjit::ScheduleInfo& s, const std::vector<std::uint64_t>& key) {
    ++calls;
    return key[0] > 1000 ? -double(s.index) : double(s.index);
  };
  built.set_tuning(tuning);
  for (int i = 0; i < 4; ++i) {
    BOOST_TEST(built.choose({500}) == 0u);
    BOOST_TEST(built.choose({8000}) == 2u);
  }
  BOOST_TEST(calls == 6);  // each key costed once (three schedules)
  BOOST_TEST(built.table().size() == 2u);
  built.set_table({{{64}, 1, "", {}}}, kjit::current_fingerprint(built.arch()));
  BOOST_TEST(built.choose({64}) == 1u);
  BOOST_TEST(built.choose({500}) == 0u);  // tuned again: set_table replaced the table
  BOOST_TEST(built.choose({64}) == 1u);   // the given row kept after that miss
}

// The same with the table given first, before anything read the stored one: the first miss (or a
// set_tuning) read the store, which never held the given rows. (Before, set_tuning's read dropped
// the given row: key 64 was costed, schedule 0 not the given 1, and 6 cost calls.)
BOOST_AUTO_TEST_CASE(a_table_given_first_over_a_read_only_store_is_kept)
{
  kjit::Cache cache(read_only_after_build(config));
  kjit::BuiltScript built = macro_script().build(cache, test_batch());
  BOOST_TEST_REQUIRE(!kjit::script::store_of(cache)->writable());
  built.set_table({{{64}, 1, "", {}}}, kjit::current_fingerprint(built.arch()));
  int calls = 0;
  kjit::TuningOptions tuning;
  tuning.fingerprint = kjit::current_fingerprint(built.arch());
  tuning.cost = [&](const kjit::ScheduleInfo& s, const std::vector<std::uint64_t>&) {
    ++calls;
    return double(s.index);
  };
  built.set_tuning(tuning);
  BOOST_TEST(built.choose({64}) == 1u);   // given
  BOOST_TEST(built.choose({500}) == 0u);  // costed
  BOOST_TEST(built.choose({64}) == 1u);   // still given
  BOOST_TEST(calls == 3);
  BOOST_TEST(built.table().size() == 2u);
}

namespace {

// The status of a fork()ed child that asks `built` for key 64: exit 0 served schedule 2, 1 another
// schedule, 3 a ScriptError, 2 another error, a signal a hang (its alarm).
int choose_64_in_a_child(kjit::BuiltScript& built)
{
  const pid_t child = ::fork();
  BOOST_TEST_REQUIRE(child >= 0);
  if (child == 0) {
    ::alarm(20);  // a hang ends as SIGALRM
    try {
      ::_exit(built.choose({64}) == 2u ? 0 : 1);
    } catch (const kjit::ScriptError&) {
      ::_exit(3);
    } catch (...) {
      ::_exit(2);
    }
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  return status;
}

// Forks while another thread of this process costs a new key of `built` (which has a row for 64,
// schedule 2), and returns the child's exit status: 0 served that row, 3 a ScriptError, 2 another
// error, a signal a hang (the child's alarm).
int fork_while_tuning(kjit::BuiltScript& built)
{
  std::atomic<bool> costing{false};
  std::atomic<bool> release{false};
  kjit::TuningOptions tuning;
  tuning.cost = [&](const kjit::ScheduleInfo& s, const std::vector<std::uint64_t>&) {
    costing = true;
    while (!release) {
      std::this_thread::yield();
    }
    return double(s.index);
  };
  built.set_tuning(tuning);
  BOOST_TEST(built.choose({64}) == 2u);
  std::thread tuner([&] { std::ignore = built.choose({1000}); });
  while (!costing) {
    std::this_thread::yield();
  }
  const int status = choose_64_in_a_child(built);
  release = true;
  tuner.join();
  BOOST_TEST(built.choose({64}) == 2u);  // the parent goes on
  BOOST_TEST(built.choose({1000}) == 0u);
  return status;
}

} // namespace

// A child fork()ed while another thread of its parent tunes never hangs. With a store, the tuner
// measures without the script's mutex (the store's lock keeps other tuners out), so the child is
// served the row it asks for. Without one, the mutex is held for as long as the cost function
// runs, and the child gets a ScriptError from the parent's BuiltScript: no thread of the child
// will ever release that mutex. (Before, its choose() waited for ever: here the alarm's SIGALRM.)
BOOST_AUTO_TEST_CASE(a_child_forked_while_its_parent_tunes_is_served_or_refused_never_hung)
{
  {
    kjit::Cache cache(config);
    kjit::BuiltScript built = macro_script().build(cache, test_batch());
    built.set_table({{{64}, 2, "", {}}}, kjit::current_fingerprint(built.arch()));
    const int status = fork_while_tuning(built);
    BOOST_TEST((WIFEXITED(status) && WEXITSTATUS(status) == 0), "with a store: status " << status);
  }
  kjit::Config memory_only = config;
  memory_only.disable_cache = true;
  kjit::Cache cache(memory_only);
  kjit::BuiltScript built = macro_script().build(cache, test_batch());
  built.set_table({{{64}, 2, "", {}}}, kjit::current_fingerprint(built.arch()));
  const int status = fork_while_tuning(built);
  BOOST_TEST((WIFEXITED(status) && WEXITSTATUS(status) == 3), "without a store: status " << status);
}

// A key with a row, and the table, are served while another thread tunes a new key of the same
// script: with a store the tuner measures without the script's mutex. (Before, every call on the
// script waited for the tuning, timers on a GPU included: here the cost function's wait for the
// row to be served ran out, 20 s.)
BOOST_AUTO_TEST_CASE(a_key_with_a_row_is_served_while_another_thread_tunes)
{
  kjit::Cache cache(config);
  kjit::BuiltScript built = macro_script().build(cache, test_batch());
  built.set_table({{{64}, 2, "", {}}}, kjit::current_fingerprint(built.arch()));
  std::mutex mutex;
  std::condition_variable changed;
  bool costing = false;
  bool served = false;
  bool waited_out = false;
  kjit::TuningOptions tuning;
  tuning.cost = [&](const kjit::ScheduleInfo& s, const std::vector<std::uint64_t>&) {
    std::unique_lock lock(mutex);
    costing = true;
    changed.notify_all();
    if (!changed.wait_for(lock, std::chrono::seconds(20), [&] { return served; })) {
      waited_out = true;
    }
    return double(s.index);
  };
  built.set_tuning(tuning);
  std::thread tuner([&] { std::ignore = built.choose({1000}); });
  {
    std::unique_lock lock(mutex);
    changed.wait(lock, [&] { return costing; });
  }
  const std::size_t choice = built.choose({64});
  const std::size_t rows = built.table().size();
  {
    const std::lock_guard lock(mutex);
    served = true;
    changed.notify_all();
  }
  tuner.join();
  BOOST_TEST(choice == 2u);
  BOOST_TEST(rows == 1u);  // the tuner's row is stored after its measures
  BOOST_TEST(!waited_out);
  BOOST_TEST(built.choose({1000}) == 0u);
  BOOST_TEST(built.table().size() == 2u);
}

// A timer or cost function that calls choose(), a table call or set_tuning of the script it tunes
// gets a ScriptError: the script's mutex is its caller's. (Before, it waited on that mutex for ever:
// here the child's alarm.) Run in a child with its own Cache, so that a hang ends there.
BOOST_AUTO_TEST_CASE(a_cost_function_using_its_own_script_gets_an_error_not_a_hang)
{
  const pid_t child = ::fork();
  BOOST_TEST_REQUIRE(child >= 0);
  if (child == 0) {
    ::alarm(60);  // a hang ends as SIGALRM
    int code = 0;
    try {
      kjit::Cache cache(config);
      kjit::BuiltScript built = macro_script().build(cache, test_batch());
      int errors = 0;
      kjit::TuningOptions tuning;
      tuning.cost = [&](const kjit::ScheduleInfo& s, const std::vector<std::uint64_t>&) {
        try {
          std::ignore = built.table();
        } catch (const kjit::ScriptError&) {
          ++errors;
        }
        try {
          std::ignore = built.choose({64});
        } catch (const kjit::ScriptError&) {
          ++errors;
        }
        return double(s.index);
      };
      built.set_tuning(tuning);
      code = built.choose({1000}) == 0u && errors == 6 && built.table().size() == 1u ? 0 : 3;
    } catch (...) {
      code = 2;
    }
    ::_exit(code);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  BOOST_TEST((WIFEXITED(status) && WEXITSTATUS(status) == 0), "status " << status);
}

// The same while a thread of the parent only looks rows up (the mutex taken and let go all the
// time): each child either chooses or gets the ScriptError, never hangs. (Before, the guard
// recorded its holder just after taking the mutex and cleared it just before letting it go: a
// child forked in between found the mutex held by no one it knew of and waited for ever.)
BOOST_AUTO_TEST_CASE(children_forked_while_a_parent_thread_looks_rows_up_never_hang)
{
  kjit::Cache cache(config);
  kjit::BuiltScript built = macro_script().build(cache, test_batch());
  built.set_table({{{64}, 2, "", {}}}, kjit::current_fingerprint(built.arch()));
  std::atomic<bool> stop{false};
  std::atomic<long> lookups{0};
  std::thread looker([&] {
    while (!stop) {
      std::ignore = built.choose({64});
      ++lookups;
    }
  });
  while (lookups == 0) {
    std::this_thread::yield();
  }
  int chose = 0;
  int refused = 0;
  int other = 0;
  for (int i = 0; i < 400 && other == 0; ++i) {
    const int status = choose_64_in_a_child(built);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
      ++chose;
    } else if (WIFEXITED(status) && WEXITSTATUS(status) == 3) {
      ++refused;
    } else {
      ++other;
      BOOST_TEST(false, "child " << i << ": status " << status);
    }
  }
  stop = true;
  looker.join();
  BOOST_TEST(other == 0);
  BOOST_TEST_MESSAGE("chose " << chose << ", refused " << refused);
}

BOOST_AUTO_TEST_SUITE_END()
