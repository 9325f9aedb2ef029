// The cache: tiers, keys, second processes, remembered failures, single flight, verbose log.
#include <boost/test/unit_test.hpp>

#include "fixture.hpp"

#include "util/hash.hpp"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <csignal>
#include <pthread.h>
#include <sys/wait.h>
#include <thread>
#include <tuple>
#include <unistd.h>

using namespace kjit::test;

namespace {

std::string probe(const std::string& cache_dir, const std::string& file, const std::string& arch,
                  const std::string& extra = "")
{
  std::string output;
  run(extra + " '" + helper("KJIT_TEST_CACHE_PROBE") + "' '" + cache_dir + "' '" + file + "' " + arch + " 2>&1",
      output);
  return output;
}

bool has_line(const std::string& output, const std::string& line)
{
  return ("\n" + output).find("\n" + line + "\n") != std::string::npos;
}

} // namespace

BOOST_FIXTURE_TEST_SUITE(cache, CacheFixture)

BOOST_AUTO_TEST_CASE(miss_then_hit_in_one_process)
{
  kjit::Cache cache(config);
  const auto first = cache.get(small_program("a"), kjit::Arch::parse("sm_90"));
  const auto second = cache.get(small_program("a"), kjit::Arch::parse("sm_90"));
  BOOST_TEST(first.get() == second.get());
  const kjit::CacheStats stats = cache.stats();
  BOOST_TEST(stats.misses == 1u);
  BOOST_TEST(stats.compiles == 1u);
  BOOST_TEST(stats.memory_hits == 1u);
  BOOST_TEST(stats.disk_hits == 0u);
  BOOST_TEST(stats.compile_ms_saved > 0.0);
  BOOST_TEST(cache.disk_entries() == 1u);

  kjit::Cache fresh(config);  // same folder, empty memory tier
  const auto third = fresh.get(small_program("a"), kjit::Arch::parse("sm_90"));
  BOOST_TEST(third->cubin == first->cubin);
  BOOST_TEST(fresh.stats().disk_hits == 1u);
  BOOST_TEST(fresh.stats().compiles == 0u);
}

BOOST_AUTO_TEST_CASE(arch_auto_takes_the_configured_arch)
{
  config.arch = "sm_80";
  kjit::Cache cache(config);
  BOOST_TEST(cache.get(small_program("auto"))->arch == "sm_80");
  BOOST_TEST(cache.prepare(small_program("auto")).arch().str() == "sm_80");
}

BOOST_AUTO_TEST_CASE(second_process_hits_without_loading_nvrtc_or_nvjitlink)
{
  const std::string file = tmp.path() + "/warm.cu";
  write_text(file, small_program("warm").source);
  const std::string cold = probe(config.cache_dir, file, "sm_90");
  BOOST_TEST(has_line(cold, "compiles: 1"), cold);
  BOOST_TEST(has_line(cold, "nvrtc_loaded: 1"), cold);

  const std::string warm = probe(config.cache_dir, file, "sm_90");
  BOOST_TEST(has_line(warm, "result: ok"), warm);
  BOOST_TEST(has_line(warm, "disk_hits: 1"), warm);
  BOOST_TEST(has_line(warm, "compiles: 0"), warm);
  BOOST_TEST(has_line(warm, "nvrtc_loaded: 0"), warm);
  BOOST_TEST(has_line(warm, "nvjitlink_loaded: 0"), warm);
}

BOOST_AUTO_TEST_CASE(entry_name_is_sha256_of_the_mirrored_key_texts)
{
  kjit::Cache cache(config);
  kjit::Program program = small_program("key");
  program.headers["params.h"] = "#define P 3\n";
  program.options = {"-DQ=4"};
  const kjit::PreparedProgram prepared = cache.prepare(program, kjit::Arch::parse("sm_90"));
  cache.get(prepared);
  cache.flush_mirror();  // written off the caller's path
  const std::string dir = config.cache_dir + "/programs/" + prepared.key();
  const std::string program_txt = read_text(dir + "/program.txt");
  const std::string options_txt = read_text(dir + "/options.txt");
  BOOST_TEST(program_txt == prepared.program_txt());
  BOOST_TEST(kjit::util::to_hex(kjit::util::sha256(program_txt + options_txt)) == prepared.key());
  BOOST_TEST(prepared.key().size() == 64u);
  BOOST_TEST(program_txt.find(program.source) != std::string::npos);
  BOOST_TEST(program_txt.find(kjit::util::to_hex(kjit::util::sha256("#define P 3\n")) + " params.h") !=
             std::string::npos);
  BOOST_TEST(options_txt.find("option: -DQ=4") != std::string::npos);
  BOOST_TEST(options_txt.find("arch: sm_90") != std::string::npos);
  BOOST_TEST(options_txt.find("nvrtc: ") != std::string::npos);
  BOOST_TEST(options_txt.find("nvjitlink: ") != std::string::npos);
  BOOST_TEST(options_txt.find("record-format: ") != std::string::npos);
  for (const char* file : {"/module/source.cu", "/module/kernel.ptx", "/module/kernel.sm_90.cubin",
                           "/module/compile.sh", "/module/headers/params.h"}) {
    BOOST_TEST(exists(dir + file), file);
  }
  BOOST_TEST(!exists(dir + "/module/lowered_names.txt"));  // no name expressions: no empty file
  BOOST_TEST(!exists(dir + "/module/nvrtc_log.txt"));      // nothing said by NVRTC: no options-only file
  BOOST_TEST(read_text(dir + "/module/kernel.sm_90.cubin") == cache.get(prepared)->cubin);
}

BOOST_AUTO_TEST_CASE(every_input_changes_the_key_and_nothing_else_does)
{
  kjit::Cache cache(config);
  kjit::Program base = small_program("k");
  base.headers["h.h"] = "#define H 1\n";
  base.options = {"-DA=1"};
  base.name_expressions = {"small_k"};
  const auto sm90 = kjit::Arch::parse("sm_90");
  const std::string key = cache.prepare(base, sm90).key();

  auto changed = [&](auto mutate, const kjit::Arch& arch) {
    kjit::Program p = base;
    mutate(p);
    return cache.prepare(p, arch).key();
  };
  BOOST_TEST(changed([](kjit::Program& p) { p.source += " "; }, sm90) != key);
  BOOST_TEST(changed([](kjit::Program& p) { p.headers["h.h"] = "#define H 2\n"; }, sm90) != key);
  BOOST_TEST(changed([](kjit::Program& p) { p.options = {"-DA=2"}; }, sm90) != key);
  BOOST_TEST(changed([](kjit::Program& p) { p.name_expressions.push_back("&small_k"); }, sm90) != key);
  BOOST_TEST(changed([](kjit::Program& p) { p.name = "other.cu"; }, sm90) != key);
  BOOST_TEST(changed([](kjit::Program&) {}, kjit::Arch::parse("sm_80")) != key);
  BOOST_TEST(changed([](kjit::Program&) {}, kjit::Arch::parse("sm_90a")) != key);
  // Equivalent spellings of an option are one key.
  BOOST_TEST(changed([](kjit::Program& p) { p.options = {"--define-macro=A=1"}; }, sm90) == key);

  char cwd[4096];
  BOOST_TEST_REQUIRE(::getcwd(cwd, sizeof cwd) != nullptr);
  BOOST_TEST_REQUIRE(::chdir(tmp.path().c_str()) == 0);
  ::setenv("KJIT_UNRELATED_TEST_VARIABLE", "1", 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  kjit::Cache later(config);
  BOOST_TEST(later.prepare(base, sm90).key() == key);
  ::unsetenv("KJIT_UNRELATED_TEST_VARIABLE");
  BOOST_TEST_REQUIRE(::chdir(cwd) == 0);
}

BOOST_AUTO_TEST_CASE(a_remembered_compile_error_is_raised_again_without_compiling)
{
  kjit::Program bad{"bad.cu", "__global__ void k(int* p) { *p = undefined_name; }\n", {}, {}, {}};
  std::string first_log;
  {
    kjit::Cache cache(config);
    try {
      cache.get(bad, kjit::Arch::parse("sm_90"));
      BOOST_FAIL("expected CompileError");
    } catch (const kjit::CompileError& e) {
      first_log = e.log();
    }
    BOOST_TEST(first_log.find("undefined_name") != std::string::npos);
    BOOST_CHECK_THROW(cache.get(bad, kjit::Arch::parse("sm_90")), kjit::CompileError);
    BOOST_TEST(cache.stats().compiles == 1u);
  }
  kjit::Cache fresh(config);
  try {
    fresh.get(bad, kjit::Arch::parse("sm_90"));
    BOOST_FAIL("expected CompileError");
  } catch (const kjit::CompileError& e) {
    BOOST_TEST(e.log() == first_log);
    BOOST_TEST(e.program_name() == "bad.cu");
    BOOST_TEST(e.arch() == "sm_90");
  }
  BOOST_TEST(fresh.stats().compiles == 0u);
  BOOST_TEST(fresh.stats().failed_hits == 1u);

  const std::string file = tmp.path() + "/bad.cu";
  write_text(file, bad.source);
  probe(config.cache_dir, file, "sm_90");  // records it under the file's name
  const std::string again = probe(config.cache_dir, file, "sm_90");
  BOOST_TEST(has_line(again, "result: compile-error"), again);
  BOOST_TEST(has_line(again, "compiles: 0"), again);
  BOOST_TEST(has_line(again, "nvrtc_loaded: 0"), again);
}

BOOST_AUTO_TEST_CASE(disabling_the_disk_cache_writes_nothing)
{
  config.disable_cache = true;
  kjit::Cache cache(config);
  cache.get(small_program("mem"), kjit::Arch::parse("sm_90"));
  cache.get(small_program("mem"), kjit::Arch::parse("sm_90"));
  BOOST_TEST(cache.stats().memory_hits == 1u);
  BOOST_TEST(!cache.has_disk_tier());
  BOOST_TEST(!exists(config.cache_dir));
}

BOOST_AUTO_TEST_CASE(many_threads_asking_for_one_key_compile_it_once)
{
  kjit::Cache cache(config);
  std::vector<std::thread> threads;
  std::vector<std::shared_ptr<const kjit::Binary>> results(8);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] { results[t] = cache.get(small_program("flight"), kjit::Arch::parse("sm_90")); });
  }
  for (auto& thread : threads) {
    thread.join();
  }
  BOOST_TEST(cache.stats().compiles == 1u);
  BOOST_TEST(cache.stats().misses == 1u);  // one thread looked in the store; the others waited for it
  for (const auto& result : results) {
    BOOST_TEST(result->cubin == results[0]->cubin);
  }
}

BOOST_AUTO_TEST_CASE(clear_empties_both_tiers_and_the_mirror)
{
  kjit::Cache cache(config);
  const auto prepared = cache.prepare(small_program("clear"), kjit::Arch::parse("sm_90"));
  cache.get(prepared);
  cache.flush_mirror();
  BOOST_TEST(exists(config.cache_dir + "/programs/" + prepared.key()));
  cache.clear();
  BOOST_TEST(cache.disk_entries() == 0u);
  BOOST_TEST(!exists(config.cache_dir + "/programs"));
  cache.get(prepared);
  BOOST_TEST(cache.stats().compiles == 1u);
  BOOST_TEST(cache.stats().memory_hits == 0u);
}

BOOST_AUTO_TEST_CASE(verbose_mode_logs_to_the_replaceable_sink)
{
  std::vector<std::string> lines;
  kjit::set_log_sink([&lines](std::string_view line) { lines.emplace_back(line); });
  config.verbose = true;
  {
    kjit::Cache cache(config);
    cache.get(small_program("verbose"), kjit::Arch::parse("sm_90"));
    cache.get(small_program("verbose"), kjit::Arch::parse("sm_90"));
  }
  kjit::set_log_sink({});
  BOOST_TEST_REQUIRE(lines.size() == 2u);
  BOOST_TEST(lines[0].find("miss, compiled small_verbose.cu sm_90") == 0u, lines[0]);
  BOOST_TEST(lines[0].find(" ms") != std::string::npos);
  BOOST_TEST(lines[1].find("hit memory small_verbose.cu sm_90") == 0u, lines[1]);
}

// The key a verbose line shows names an entry the store has (issue 39). A program with a disk header
// is compiled under a provisional key first; the line showed that key, which names nothing, where
// the entry is stored under the key the compile established.
BOOST_AUTO_TEST_CASE(a_verbose_miss_names_the_key_it_was_stored_under)
{
  std::vector<std::string> lines;
  kjit::set_log_sink([&lines](std::string_view line) { lines.emplace_back(line); });
  config.verbose = true;
  const std::string dir = tmp.path() + "/verbose_src";
  std::filesystem::create_directories(dir);
  write_text(dir + "/v.h", "#define V 7\n");
  write_text(dir + "/v.cu", "#include \"v.h\"\nextern \"C\" __global__ void k(int* p) { *p = V; }\n");
  // Past the clock tick of the writes: a header stamped within the tick of the compile's start is
  // too new to stand for its content (deps::too_new), no manifest is recorded, and prepare() below
  // gives a provisional key (a fast run: no commit before the compile since the toolchain rows wait
  // for the entry's).
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  kjit::Cache cache(config);
  const kjit::Program program = kjit::program_from_file(dir + "/v.cu");
  const kjit::Lookup found = cache.lookup(program, kjit::Arch::parse("sm_90"));
  kjit::set_log_sink({});
  BOOST_TEST_REQUIRE((found.source == kjit::Source::compiled));
  BOOST_TEST_REQUIRE(!lines.empty());
  const std::string& line = lines.back();
  BOOST_TEST(line.find("miss, compiled " + dir + "/v.cu sm_90 ") == 0u, line);
  const std::string shown = line.substr(line.find(" sm_90 ") + 7, 12);
  const std::string key = cache.prepare(program, kjit::Arch::parse("sm_90")).key();
  BOOST_TEST(key.compare(0, 12, shown) == 0, shown << " vs " << key);
  BOOST_TEST(cache.resolve_key(shown) == key);
}

BOOST_AUTO_TEST_CASE(dump_ir_writes_the_ir_folder)
{
  config.dump_ir = true;
  kjit::Cache cache(config);
  const auto prepared = cache.prepare(small_program("ir"), kjit::Arch::parse("sm_90"));
  cache.get(prepared);
  cache.flush_mirror();
  BOOST_TEST(read_text(config.cache_dir + "/programs/" + prepared.key() + "/ir/kernel.ltoir").size() > 0u);
}

BOOST_AUTO_TEST_CASE(the_default_cache_follows_the_options)
{
  kjit::option::cache_dir(tmp.path() + "/default");
  kjit::option::arch("sm_80");
  const auto binary = kjit::get(small_program("default"));
  BOOST_TEST(binary->arch == "sm_80");
  BOOST_TEST(kjit::default_cache().config().cache_dir == tmp.path() + "/default");
  BOOST_TEST(kjit::default_cache().disk_entries() == 1u);
  kjit::clear_cache();
  BOOST_TEST(kjit::default_cache().disk_entries() == 0u);
  kjit::option::reset();
}

// A Cache destroyed on a thread whose cancellation is pending: its destructor (usage log, last
// uses, the store's close, joined threads) is full of cancellation points, and a cancellation
// unwinding through it ended the process with std::terminate ("exception not rethrown"). It acts
// at the thread's next cancellation point after the destructor, which has done all its work.
BOOST_AUTO_TEST_CASE(a_cache_destroyed_with_a_cancellation_pending_finishes_then_the_thread_is_cancelled)
{
  const pid_t child = ::fork();
  BOOST_TEST_REQUIRE(child >= 0);
  if (child == 0) {
    ::signal(SIGABRT, SIG_DFL);  // reported as the child's end, not caught by the test framework
    const auto body = [](void* argument) -> void* {
      {
        kjit::Cache cache(*static_cast<kjit::Config*>(argument));
        std::ignore = cache.get(small_program("cancelled"), kjit::Arch::parse("sm_90"));
        ::pthread_cancel(::pthread_self());  // pending: no cancellation point until the destructor
      }
      ::pthread_testcancel();
      return nullptr;
    };
    pthread_t thread;
    if (::pthread_create(&thread, nullptr, body, &config) != 0) {
      ::_exit(3);
    }
    void* result = nullptr;
    ::pthread_join(thread, &result);
    ::_exit(result != PTHREAD_CANCELED ? 5 : 0);
  }
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  BOOST_TEST(WIFEXITED(status), "the child ended by signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0));
  BOOST_TEST((WIFEXITED(status) ? WEXITSTATUS(status) : -1) == 0);
  BOOST_TEST(!read_text(config.cache_dir + "/usage.log").empty(), "the destructor wrote the usage log");
}

BOOST_AUTO_TEST_SUITE_END()
