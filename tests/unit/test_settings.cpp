// Each setting changes what a real Cache does: memory limit, repo-local folder, mirror, shared
// folders, toolkit root, map size, and a Cache used across fork().
#include <boost/test/unit_test.hpp>

#include "fixture.hpp"

#include <cmath>
#include <cstdlib>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace kjit::test;

namespace {

// Sets (or, with nullptr, unsets) an environment variable for one scope.
class ScopedEnv {
public:
  ScopedEnv(const char* name, const char* value) : m_name(name)
  {
    if (const char* old = std::getenv(name)) {
      m_old = old;
      m_had = true;
    }
    if (value != nullptr) {
      ::setenv(name, value, 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~ScopedEnv()
  {
    if (m_had) {
      ::setenv(m_name, m_old.c_str(), 1);
    } else {
      ::unsetenv(m_name);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

private:
  const char* m_name;
  std::string m_old;
  bool m_had = false;
};

// Changes the working directory for one scope.
class ScopedCwd {
public:
  explicit ScopedCwd(const std::string& dir)
  {
    if (::getcwd(m_old, sizeof m_old) == nullptr || ::chdir(dir.c_str()) != 0) {
      throw std::runtime_error("cannot change to " + dir);
    }
  }
  ~ScopedCwd() { std::ignore = ::chdir(m_old); }
  ScopedCwd(const ScopedCwd&) = delete;
  ScopedCwd& operator=(const ScopedCwd&) = delete;

private:
  char m_old[4096] = {};
};

const kjit::Arch k_sm90 = kjit::Arch::parse("sm_90");

} // namespace

BOOST_FIXTURE_TEST_SUITE(settings_in_a_cache, CacheFixture)

BOOST_AUTO_TEST_CASE(the_memory_limit_bounds_what_the_memory_tier_keeps)
{
  {
    config.memory_limit = 1;  // smaller than any binary: nothing is kept in memory
    kjit::Cache cache(config);
    cache.get(small_program("limit"), k_sm90);
    cache.get(small_program("limit"), k_sm90);
    BOOST_TEST(cache.stats().memory_hits == 0u);
    BOOST_TEST(cache.stats().disk_hits == 1u);
  }
  {
    config.memory_limit = std::size_t(1) << 30;
    kjit::Cache cache(config);
    cache.get(small_program("limit"), k_sm90);  // a disk hit: marked
    cache.get(small_program("limit"), k_sm90);  // the second: kept
    cache.get(small_program("limit"), k_sm90);
    BOOST_TEST(cache.stats().disk_hits == 2u);
    BOOST_TEST(cache.stats().memory_hits == 1u);
  }
  {
    // Room for one binary: the least recently used one leaves.
    const std::size_t one = kjit::Cache(config).get(small_program("limit"), k_sm90)->cubin.size();
    config.memory_limit = one + one / 2;
    kjit::Cache cache(config);
    cache.get(small_program("limit"), k_sm90);
    cache.get(small_program("limit"), k_sm90);    // its second disk hit: kept
    cache.get(small_program("limit_b"), k_sm90);  // compiled, kept: "limit" leaves
    cache.get(small_program("limit"), k_sm90);    // a disk hit again, kept: "limit_b" leaves
    BOOST_TEST(cache.stats().memory_hits == 0u);
    cache.get(small_program("limit"), k_sm90);
    BOOST_TEST(cache.stats().memory_hits == 1u);
  }
}

BOOST_AUTO_TEST_CASE(repo_local_mode_puts_the_cache_in_the_git_root)
{
  const std::string repo = tmp.path() + "/repo";
  BOOST_TEST_REQUIRE(::mkdir(repo.c_str(), 0700) == 0);
  BOOST_TEST_REQUIRE(::mkdir((repo + "/.git").c_str(), 0700) == 0);
  BOOST_TEST_REQUIRE(::mkdir((repo + "/sub").c_str(), 0700) == 0);
  ScopedEnv no_dir("KJIT_CACHE_DIR", nullptr);
  ScopedCwd cwd(repo + "/sub");
  {
    ScopedEnv on("KJIT_REPO_LOCAL_CACHE", "1");
    kjit::Cache cache(kjit::current_config());
    cache.get(small_program("repo"), k_sm90);
    BOOST_TEST(cache.config().cache_dir == repo + "/.kjit_cache");
    BOOST_TEST(exists(repo + "/.kjit_cache/store/data.mdb"));
  }
  ScopedEnv off("KJIT_REPO_LOCAL_CACHE", "0");
  BOOST_TEST(kjit::current_config().cache_dir != repo + "/.kjit_cache");
}

BOOST_AUTO_TEST_CASE(without_the_mirror_only_the_store_is_written)
{
  config.mirror = false;
  kjit::Cache cache(config);
  cache.get(small_program("no_mirror"), k_sm90);
  BOOST_TEST(cache.disk_entries() == 1u);
  BOOST_TEST(!exists(config.cache_dir + "/programs"));
}

BOOST_AUTO_TEST_CASE(a_group_writable_folder_needs_the_shared_setting)
{
  BOOST_TEST_REQUIRE(::mkdir(config.cache_dir.c_str(), 0770) == 0);
  BOOST_TEST_REQUIRE(::chmod(config.cache_dir.c_str(), 0770) == 0);
  BOOST_CHECK_THROW(kjit::Cache{config}, kjit::StoreError);
  config.shared_cache = true;
  kjit::Cache cache(config);
  cache.get(small_program("shared"), k_sm90);
  BOOST_TEST(cache.disk_entries() == 1u);
}

// NVRTC is loaded once per process: a fresh process shows where it comes from.
BOOST_AUTO_TEST_CASE(the_toolkit_root_setting_is_where_nvrtc_is_loaded_from)
{
  const std::string file = tmp.path() + "/toolkit.cu";
  write_text(file, small_program("toolkit").source);
  const std::string probe = "'" + helper("KJIT_TEST_CACHE_PROBE") + "' '" + config.cache_dir + "' '" + file + "' sm_90";
  std::string output;
  BOOST_TEST(run("KJIT_CUDA_HOME='" + tmp.path() + "/no-toolkit' " + probe, output) == 1, output);
  BOOST_TEST(output.find("result: error") != std::string::npos, output);
  BOOST_TEST(output.find(tmp.path() + "/no-toolkit/") != std::string::npos, output);
  const char* home = std::getenv("CUDA_HOME");
  const std::string toolkit = home != nullptr && *home != '\0' ? home : "/usr/local/cuda";
  BOOST_TEST(run("KJIT_CUDA_HOME='" + toolkit + "' " + probe, output) == 0, output);
  BOOST_TEST(output.find("compiles: 1") != std::string::npos, output);
  // Empty or unset CUDA_HOME/CUDA_PATH: the build's toolkit.
  for (const char* env : {"env -u KJIT_CUDA_HOME CUDA_HOME= CUDA_PATH= ", "env -u KJIT_CUDA_HOME -u CUDA_HOME -u CUDA_PATH "}) {
    write_text(file, small_program(std::string("toolkit") + env).source);
    BOOST_TEST(run(env + probe + " 2>&1", output) == 0, env + output);
    BOOST_TEST(output.find("compiles: 1") != std::string::npos, env + output);
  }
}

BOOST_AUTO_TEST_CASE(a_tiny_initial_map_grows_to_hold_every_entry)
{
  config.store_map_size = 32768;
  {
    kjit::Cache cache(config);
    for (int i = 0; i < 12; ++i) {
      cache.get(small_program("map" + std::to_string(i)), k_sm90);
    }
    BOOST_TEST(cache.disk_entries() == 12u);
  }
  kjit::Cache again(config);
  for (int i = 0; i < 12; ++i) {
    again.get(small_program("map" + std::to_string(i)), k_sm90);
  }
  BOOST_TEST(again.stats().disk_hits == 12u);
  BOOST_TEST(again.stats().compiles == 0u);
}

// A Cache used in a forked child refuses (StoreError); the default cache reopens in the child.
BOOST_AUTO_TEST_CASE(a_cache_is_not_used_across_fork_but_the_default_cache_reopens)
{
  kjit::Cache cache(config);
  cache.get(small_program("fork_a"), k_sm90);
  kjit::option::cache_dir(config.cache_dir);
  kjit::option::arch("sm_90");
  kjit::option::mirror(false);
  kjit::get(small_program("fork_a"));  // the parent's default cache is open too
  const pid_t child = ::fork();
  BOOST_TEST_REQUIRE(child >= 0);
  if (child == 0) {
    int code = 0;
    try {
      kjit::Cache copy_of_parent_state(config);  // a new Cache in the child is fine
      (void)copy_of_parent_state.disk_entries();
      try {
        cache.get(small_program("fork_b"), k_sm90);  // the parent's: refused
        code |= 1;
      } catch (const kjit::StoreError&) {
      }
      // The default cache is rebuilt for the child and serves the parent's entry from disk.
      kjit::get(small_program("fork_a"));
      if (kjit::default_cache().stats().disk_hits != 1) {
        code |= 2;
      }
    } catch (...) {
      code |= 4;
    }
    ::_exit(code);
  }
  int status = 0;
  BOOST_TEST_REQUIRE(::waitpid(child, &status, 0) == child);
  kjit::option::reset();
  BOOST_TEST(WIFEXITED(status));
  BOOST_TEST(WEXITSTATUS(status) == 0);
  // The parent's cache still works after the child is gone.
  cache.get(small_program("fork_c"), k_sm90);
  BOOST_TEST(cache.stats().compiles == 2u);
}

BOOST_AUTO_TEST_CASE(a_config_given_directly_is_checked_like_the_environment)
{
  // A Config built by hand skips the table's parsers. Before, a bad arch was an ArchError at the
  // first get(), a NaN lock timeout waited for another process's compile forever (and a
  // negative one never waited), a map size of 0 was taken: no error at all.
  const auto setting_of = [](const kjit::Config& bad) -> std::string {
    try {
      kjit::Cache cache(bad);
    } catch (const kjit::ConfigError& e) {
      return e.variable();
    }
    return "no error";
  };
  for (const char* arch : {"garbage", "", "sm_9x"}) {
    kjit::Config bad = config;
    bad.arch = arch;
    BOOST_TEST(setting_of(bad) == "arch");
  }
  for (const double timeout : {std::nan(""), -1.0, 0.0, 86401.0, HUGE_VAL}) {
    kjit::Config bad = config;
    bad.compile_lock_timeout_s = timeout;
    BOOST_TEST(setting_of(bad) == "compile_lock_timeout", timeout);
  }
  kjit::Config bad = config;
  bad.store_map_size = 0;
  BOOST_TEST(setting_of(bad) == "store_map_size");
  BOOST_TEST(!exists(config.cache_dir));  // refused before anything was made
  kjit::Config good = config;
  good.arch = "auto";
  good.compile_lock_timeout_s = 86400;
  good.store_map_size = 32768;
  BOOST_TEST(setting_of(good) == "no error");
}

// A Cache given its own Config does not read the environment's settings, not even on its first
// miss, which probes NVRTC's build. Before, that probe took current_config(): any bad KJIT_* value
// (meant for another part of the host, or left over) made every miss of such a Cache a
// ConfigError, in-process and in get_many's workers alike. Its own process: the probe runs once.
BOOST_AUTO_TEST_CASE(a_cache_given_its_config_ignores_bad_settings_in_the_environment)
{
  const std::string file = tmp.path() + "/own.cu";
  write_text(file, small_program("own").source);
  const std::string output =
    probe_cache(tmp.path() + "/own-cache", file, "sm_90 --own-config", "KJIT_MAX_SIZE='not a size'");
  BOOST_TEST(output_has_line(output, "result: ok"), output);
  BOOST_TEST(output_has_line(output, "compiles: 1"), output);
}

BOOST_AUTO_TEST_SUITE_END()
