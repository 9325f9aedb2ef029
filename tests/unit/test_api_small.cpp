// Small API defects of issue 20: Cache{Config{}}, Arch::parse's message, explain() on a repeated option;
// and of the eleventh review: a PreparedProgram not made by prepare() (default-constructed, moved
// from), compute capabilities past 99.9, path settings with a NUL byte, log sinks that throw or call kjit.
#include <boost/test/unit_test.hpp>

#include "fixture.hpp"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <functional>
#include <tuple>
#include <utility>

#include <sys/wait.h>
#include <unistd.h>

using namespace kjit::test;

namespace {

// `lookup` throws the kjit::Error that names Cache::prepare (not, say, a CudaError for its arch).
void refused(const std::function<void()>& lookup)
{
  try {
    lookup();
    BOOST_ERROR("a PreparedProgram that prepare() did not make was looked up");
  } catch (const kjit::Error& e) {
    BOOST_TEST(std::string(e.what()).find("Cache::prepare") != std::string::npos, e.what());
  }
}

// `body` run in a child process: its exit status (128 + the signal for a child a signal ended).
int in_child(const std::function<int()>& body)
{
  std::fflush(nullptr);
  const pid_t child = ::fork();
  BOOST_TEST_REQUIRE(child >= 0);
  if (child == 0) {
    ::signal(SIGABRT, SIG_DFL);  // reported as the child's end, not caught by the test framework
    ::signal(SIGALRM, SIG_DFL);
    ::alarm(120);  // only a bound for a child that hangs (the failure), never a wait for success
    int code = 99;
    try {
      code = body();
    } catch (...) {
      code = 98;
    }
    ::_exit(code);
  }
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

} // namespace

BOOST_FIXTURE_TEST_SUITE(api_small, CacheFixture)

BOOST_AUTO_TEST_CASE(a_config_without_a_cache_folder_names_the_field)
{
  // Used to be "cannot create the cache folder : No such file or directory".
  try {
    kjit::Cache cache{kjit::Config{}};
    BOOST_ERROR("expected ConfigError");
  } catch (const kjit::ConfigError& e) {
    BOOST_TEST(e.variable() == "cache_dir");
    BOOST_TEST(std::string(e.what()).find("Config::cache_dir is empty") != std::string::npos, e.what());
    BOOST_TEST(std::string(e.what()).find("folder :") == std::string::npos, e.what());
  }
  kjit::Config memory_only;
  memory_only.disable_cache = true;  // no folder needed
  kjit::Cache cache(memory_only);
  BOOST_TEST(!cache.has_disk_tier());
}

BOOST_AUTO_TEST_CASE(every_arch_parse_error_lists_every_form)
{
  for (const char* bad : {"xx_90", "sm_9", "sm_90b", "compute_"}) {
    try {
      kjit::Arch::parse(bad);
      BOOST_ERROR("expected ArchError for " << bad);
    } catch (const kjit::ArchError& e) {
      BOOST_TEST(std::string(e.what()).find("sm_XYf") != std::string::npos, e.what());
      BOOST_TEST(std::string(e.what()).find(bad) != std::string::npos, e.what());
    }
  }
}

BOOST_AUTO_TEST_CASE(explain_calls_a_repeated_option_repeated_not_reordered)
{
  const std::string include = tmp.path() + "/inc";
  std::string output;
  BOOST_TEST_REQUIRE(kjit::test::run("mkdir -p '" + include + "'", output) == 0);
  kjit::Program program = small_program("explained");
  program.options = {"-DX=1", "-I" + include};
  kjit::Cache cache(config);
  cache.get(program, kjit::Arch::parse("sm_90"));
  for (const std::string& repeated : {std::string("-DX=1"), "-I" + include}) {
    kjit::Program twice = program;
    twice.options.push_back(repeated);
    const kjit::MissExplanation why = cache.explain(twice, kjit::Arch::parse("sm_90"));
    if (why.hit) {
      continue;  // the key does not depend on it (a repeated -I folder is searched once)
    }
    std::string all;
    for (const std::string& line : why.differences) {
      all += line + "\n";
    }
    BOOST_TEST(all.find("reordered") == std::string::npos, all);
    BOOST_TEST(all.find("repeated (2 times, was 1)") != std::string::npos, all);
  }
  kjit::Program swapped = program;
  std::swap(swapped.options[0], swapped.options[1]);
  const kjit::MissExplanation why = cache.explain(swapped, kjit::Arch::parse("sm_90"));
  BOOST_TEST(!why.hit);
  BOOST_TEST((std::find(why.differences.begin(), why.differences.end(), "options reordered") != why.differences.end()));
}

// of_compute_capability(INT_MAX, 9) overflowed into "sm_-1" (undefined behaviour), and (100, 0)
// made "sm_1000", an arch Arch::parse refuses: every arch it makes now parses back to itself.
BOOST_AUTO_TEST_CASE(every_compute_capability_arch_parses_back_to_itself)
{
  for (const auto& [major, minor] : {std::pair{100, 0}, {214748364, 8}, {2147483647, 9}, {1000, 0}}) {
    BOOST_CHECK_THROW(kjit::Arch::of_compute_capability(major, minor), kjit::ArchError);
  }
  for (const int major : {1, 9, 10, 12, 99}) {
    for (int minor = 0; minor <= 9; ++minor) {
      const kjit::Arch arch = kjit::Arch::of_compute_capability(major, minor);
      BOOST_TEST((kjit::Arch::parse(arch.str()) == arch), arch.str());
      BOOST_TEST(arch.number() == major * 10 + minor);
    }
  }
}

// A path with a NUL byte was cut at it without a word (the system reads a C string): the cache of
// option::cache_dir("/tmp/x\0y") went to /tmp/x. Refused as every other bad setting is.
BOOST_AUTO_TEST_CASE(a_path_setting_with_a_nul_byte_is_a_config_error)
{
  const std::string cut = tmp.path() + "/cut";
  const std::string with_nul = cut + std::string("\0/elsewhere", 11);
  BOOST_CHECK_THROW(kjit::option::cache_dir(with_nul), kjit::ConfigError);
  BOOST_CHECK_THROW(kjit::option::cuda_home(with_nul), kjit::ConfigError);
  BOOST_CHECK_THROW(kjit::option::bundle(with_nul), kjit::ConfigError);
  BOOST_CHECK_THROW(kjit::option::remote_password_file(with_nul), kjit::ConfigError);
  kjit::option::reset();
  for (int field = 0; field < 4; ++field) {
    kjit::Config bad = config;
    (field == 0 ? bad.cache_dir : field == 1 ? bad.cuda_home : field == 2 ? bad.remote_password_file
                                                                          : bad.bundles.emplace_back()) = with_nul;
    BOOST_CHECK_THROW(kjit::Cache{bad}, kjit::ConfigError);
  }
  BOOST_TEST(!exists(cut));  // no folder made at the cut path
}

// A moved-from PreparedProgram kept the key of the program it held but not the program: get()
// compiled the empty program left behind and stored it under the real program's key, which every
// later lookup of that program (in any process) was then served. It is refused instead.
BOOST_AUTO_TEST_CASE(a_moved_from_prepared_program_is_refused_not_compiled_under_its_key)
{
  const kjit::Program program{"moved.cu", "extern \"C\" __global__ void wanted(int* p) { *p = 1; }\n", {}, {}, {}};
  const kjit::Arch sm90 = kjit::Arch::parse("sm_90");
  {
    kjit::Cache cache(config);
    kjit::PreparedProgram prepared = cache.prepare(program, sm90);
    const kjit::PreparedProgram kept = std::move(prepared);
    refused([&] { std::ignore = cache.get(prepared); });  // NOLINT(bugprone-use-after-move)
    refused([&] { std::ignore = cache.lookup(prepared); });
    BOOST_TEST(cache.disk_entries() == 0u);
    BOOST_TEST(cache.get(kept)->kernel("wanted").has_value());
    kjit::PreparedProgram assigned;
    assigned = kept;  // copies stay prepared, and so does the target of a move
    kjit::PreparedProgram target = std::move(assigned);
    BOOST_TEST(cache.get(target)->kernel("wanted").has_value());
  }
  kjit::Cache later(config);
  BOOST_TEST(later.get(program, sm90)->kernel("wanted").has_value());
}

// A default-constructed PreparedProgram (arch auto, key 000…0) was compiled for the device and
// stored under the key 000…0, then served to any other one whatever the device.
BOOST_AUTO_TEST_CASE(a_default_constructed_prepared_program_is_refused)
{
  config.arch = "sm_90";
  kjit::Cache cache(config);
  refused([&] { std::ignore = cache.get(kjit::PreparedProgram{}); });
  refused([&] { std::ignore = cache.lookup(kjit::PreparedProgram{}); });
  BOOST_TEST(cache.disk_entries() == 0u);
}

// A compile lock timeout of any positive duration is taken as given: option::compile_lock_timeout
// wrote it with six decimals, so 1e-7 s became "0.000000" and was refused. (Found by the API
// reviewer; a ConfigError before.)
BOOST_AUTO_TEST_CASE(a_tiny_compile_lock_timeout_is_taken_as_given)
{
  BOOST_CHECK_NO_THROW(kjit::option::compile_lock_timeout(1e-7));
  BOOST_TEST(kjit::current_config().compile_lock_timeout_s == 1e-7, boost::test_tools::tolerance(1e-9));
  BOOST_CHECK_THROW(kjit::option::compile_lock_timeout(-1), kjit::ConfigError);
  kjit::option::reset();
}

// prune_older_than() with any negative age removes every entry, as -1 does (a cutoff after now):
// INT64_MIN overflowed the cutoff (undefined behaviour), which wrapped to a moment before every
// entry, and nothing was removed. (Before, INT64_MIN removed nothing.)
BOOST_AUTO_TEST_CASE(pruning_by_the_most_negative_age_removes_every_entry)
{
  kjit::Cache cache(config);
  cache.get({"aged.cu", "extern \"C\" __global__ void aged(int* p) { *p = 1; }\n", {}, {}, {}}, kjit::Arch::parse("sm_90"));
  BOOST_TEST(cache.prune_older_than(INT64_MAX) == 0u);  // made just now
  BOOST_TEST(cache.prune_older_than(INT64_MIN) == 1u);
  BOOST_TEST(cache.disk_entries() == 0u);
}

// A log sink that throws: the exception left kjit's threads (here the mirror writer's warning) and
// ended the host with std::terminate. The line goes to stderr instead.
BOOST_AUTO_TEST_CASE(a_log_sink_that_throws_never_ends_the_host)
{
  const int status = in_child([&] {
    kjit::set_log_sink([](std::string_view line) { throw std::runtime_error("no room for: " + std::string(line)); });
    kjit::Cache cache(config);
    write_text(config.cache_dir + "/programs", "a file where the mirror's folder goes\n");  // every mirror write fails
    std::ignore = cache.get(small_program("sink_throws"), kjit::Arch::parse("sm_90"));
    cache.flush_mirror();
    return cache.stats().mirror_errors > 0 ? 0 : 1;
  });
  BOOST_TEST(status == 0);  // 128 + SIGABRT before
}

// A sink that replaces itself (or calls anything that logs) waited for the lock its own call held
// for ever.
BOOST_AUTO_TEST_CASE(a_log_sink_may_replace_itself)
{
  const int status = in_child([&] {
    int calls = 0;
    kjit::set_log_sink([&calls](std::string_view) {
      ++calls;
      kjit::set_log_sink({});  // the next line goes to stderr
    });
    kjit::Cache cache(config);
    write_text(config.cache_dir + "/programs", "a file where the mirror's folder goes\n");
    std::ignore = cache.get(small_program("sink_replaced"), kjit::Arch::parse("sm_90"));
    cache.flush_mirror();
    return calls == 1 ? 0 : 1;
  });
  BOOST_TEST(status == 0);  // 128 + SIGALRM (a deadlock) before
}

BOOST_AUTO_TEST_SUITE_END()
