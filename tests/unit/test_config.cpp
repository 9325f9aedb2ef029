// The settings table: environment, API overrides, strict parsing.
#include <boost/test/unit_test.hpp>

#include <algorithm>

#include <kjit/config.hpp>
#include <kjit/error.hpp>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

namespace {

// Sets an environment variable for one test and restores the old state after.
class ScopedEnv {
public:
  ScopedEnv(const char* name, const char* value) : m_name(name)
  {
    if (const char* old = std::getenv(name)) {
      m_old = old;
      m_had = true;
    }
    ::setenv(name, value, 1);
  }
  ~ScopedEnv()
  {
    if (m_had) {
      ::setenv(m_name, m_old.c_str(), 1);
    } else {
      ::unsetenv(m_name);
    }
  }

private:
  const char* m_name;
  std::string m_old;
  bool m_had = false;
};

std::string config_error_variable(const char* name, const char* value)
{
  ScopedEnv env(name, value);
  try {
    (void)kjit::current_config();
  } catch (const kjit::ConfigError& e) {
    return e.variable();
  }
  return "(no error)";
}

} // namespace

BOOST_AUTO_TEST_SUITE(config)

BOOST_AUTO_TEST_CASE(strict_booleans)
{
  for (const char* yes : {"1", "true", "YES", "On"}) {
    BOOST_TEST(kjit::parse_bool(yes, "X"));
  }
  for (const char* no : {"0", "false", "no", "OFF"}) {
    BOOST_TEST(!kjit::parse_bool(no, "X"));
  }
  for (const char* bad : {"", "2", "y", "enable", "truee"}) {
    BOOST_CHECK_THROW(kjit::parse_bool(bad, "X"), kjit::ConfigError);
  }
}

BOOST_AUTO_TEST_CASE(sizes)
{
  BOOST_TEST(kjit::parse_size("4096", "X") == 4096u);
  BOOST_TEST(kjit::parse_size("64KiB", "X") == 65536u);
  BOOST_TEST(kjit::parse_size("256MiB", "X") == 256u << 20);
  BOOST_TEST(kjit::parse_size("2G", "X") == std::size_t(2) << 30);
  for (const char* bad : {"", "MiB", "12 MiB", "-1", "1.5G", "10XB", "99999999999999999999", "18446744073709551616",
                          "000000000000000000000000000000000000000018446744073709551616", "16777216T"}) {
    BOOST_CHECK_THROW(kjit::parse_size(bad, "X"), kjit::ConfigError);
  }
  // Every size_t is a size: the API writes its argument in full (max_size(SIZE_MAX) was refused as
  // "not a size", and so was any value of 16 digits or more, 1 PiB and up).
  BOOST_TEST(kjit::parse_size(std::to_string(SIZE_MAX), "X") == SIZE_MAX);
  BOOST_TEST(kjit::parse_size("1125899906842624", "X") == std::size_t(1) << 50);
  BOOST_TEST(kjit::parse_size("0000000000000000000064KiB", "X") == 65536u);
  BOOST_CHECK_NO_THROW(kjit::option::max_size(SIZE_MAX));
  BOOST_CHECK_NO_THROW(kjit::option::store_map_size(std::size_t(1) << 50));
  BOOST_TEST(kjit::current_config().max_size == SIZE_MAX);
  kjit::option::reset();
}

BOOST_AUTO_TEST_CASE(every_bad_environment_value_names_its_variable)
{
  const std::pair<const char*, const char*> cases[] = {
    {"KJIT_DISABLE_CACHE", "maybe"}, {"KJIT_VERBOSE", "2"},         {"KJIT_MIRROR", "nope"},
    {"KJIT_DUMP_IR", "yess"},        {"KJIT_ARCH", "sm_9x"},        {"KJIT_MEMORY_LIMIT", "lots"},
    {"KJIT_SHARED_CACHE", "sure"},   {"KJIT_REPO_LOCAL_CACHE", "1.0"}, {"KJIT_STORE_MAP_SIZE", "1KiB"},
    {"KJIT_COMPILE_LOCK_TIMEOUT", "0"}, {"KJIT_MAX_SIZE", "-1"},
  };
  kjit::option::strict_environment(true);
  for (const auto& [name, value] : cases) {
    BOOST_TEST(config_error_variable(name, value) == name);
  }
  kjit::option::reset();  // strictness too
  BOOST_TEST(config_error_variable("KJIT_VERBOSE", "2") == "(no error)");
}

// A stray KJIT_* value on a customer's machine must not take the application down (issue 39):
// before, each of these made current_config(), and so kjit::get, throw ConfigError. A malformed
// value is left out with one warning naming it (once per value, though read on every call) and
// its default applies; an empty value is unset, without a warning.
BOOST_AUTO_TEST_CASE(a_malformed_environment_value_is_left_out_with_one_warning)
{
  kjit::option::reset();
  std::vector<std::string> lines;
  kjit::set_log_sink([&lines](std::string_view line) { lines.emplace_back(line); });
  const kjit::Config defaults = kjit::current_config();
  const std::pair<const char*, const char*> malformed[] = {
    {"KJIT_VERBOSE", "maybe"}, {"KJIT_MAX_SIZE", "-1"}, {"KJIT_MEMORY_LIMIT", "lots"},
    {"KJIT_STORE_MAP_SIZE", "1KiB"}, {"KJIT_ARCH", "sm_9x"}, {"KJIT_COMPILE_LOCK_TIMEOUT", "soon"},
    {"KJIT_REMOTE_CACHE", "http://nope"},
  };
  for (const auto& [name, value] : malformed) {
    lines.clear();
    ScopedEnv env(name, value);
    kjit::Config config;
    BOOST_CHECK_NO_THROW(config = kjit::current_config());
    BOOST_CHECK_NO_THROW(config = kjit::current_config());
    BOOST_TEST(config.verbose == defaults.verbose);
    BOOST_TEST(config.max_size == defaults.max_size);
    BOOST_TEST(config.memory_limit == defaults.memory_limit);
    BOOST_TEST(config.store_map_size == defaults.store_map_size);
    BOOST_TEST(config.arch == defaults.arch);
    BOOST_TEST(config.compile_lock_timeout_s == defaults.compile_lock_timeout_s);
    BOOST_TEST(config.remote_cache == defaults.remote_cache);
    BOOST_TEST_REQUIRE(lines.size() == 1u, name);
    BOOST_TEST(lines[0].find(name) != std::string::npos, lines[0]);
    BOOST_TEST(lines[0].find("default") != std::string::npos, lines[0]);
  }
  lines.clear();
  for (const char* name : {"KJIT_CACHE_DIR", "KJIT_MAX_SIZE", "KJIT_VERBOSE", "KJIT_ARCH"}) {
    ScopedEnv env(name, "");
    kjit::Config config;
    BOOST_CHECK_NO_THROW(config = kjit::current_config());
    BOOST_TEST(config.cache_dir == defaults.cache_dir);
    BOOST_TEST(config.max_size == defaults.max_size);
    BOOST_TEST(config.arch == defaults.arch);
  }
  BOOST_TEST(lines.empty());
  kjit::set_log_sink({});
  // What `kjit config` and setting_values() show is what is in force: an empty variable is the
  // default's, a malformed one is marked invalid (both showed as set by the environment).
  {
    ScopedEnv empty("KJIT_MAX_SIZE", "");
    ScopedEnv malformed("KJIT_VERBOSE", "maybe");
    for (const kjit::SettingValue& value : kjit::setting_values()) {
      if (value.variable == "KJIT_MAX_SIZE") {
        BOOST_TEST(value.source == "default");
        BOOST_TEST(value.value == "5GiB");
      }
      if (value.variable == "KJIT_VERBOSE") {
        BOOST_TEST(value.source == "invalid");
      }
    }
  }
  // A program that asks for strictness (the CLI) gets an error for an empty variable too: an
  // empty KJIT_CACHE_DIR must not make `kjit clear` clear the default folder.
  kjit::option::strict_environment(true);
  BOOST_TEST(config_error_variable("KJIT_CACHE_DIR", "") == "KJIT_CACHE_DIR");
  kjit::option::reset();
}

BOOST_AUTO_TEST_CASE(precedence_default_environment_api)
{
  kjit::option::reset();
  ScopedEnv unset_xdg("XDG_CACHE_HOME", "/tmp/kjit-xdg-test");
  ::unsetenv("KJIT_CACHE_DIR");
  BOOST_TEST(kjit::current_config().cache_dir == "/tmp/kjit-xdg-test/kjit");
  BOOST_TEST(kjit::current_config().arch == "auto");
  {
    ScopedEnv env("KJIT_CACHE_DIR", "/tmp/from-env");
    ScopedEnv arch("KJIT_ARCH", "sm_80");
    BOOST_TEST(kjit::current_config().cache_dir == "/tmp/from-env");
    BOOST_TEST(kjit::current_config().arch == "sm_80");
    kjit::option::cache_dir("/tmp/from-api");
    kjit::option::arch("sm_90a");
    BOOST_TEST(kjit::current_config().cache_dir == "/tmp/from-api");
    BOOST_TEST(kjit::option::get_cache_dir() == "/tmp/from-api");
    BOOST_TEST(kjit::current_config().arch == "sm_90a");
    kjit::option::reset();
    BOOST_TEST(kjit::current_config().cache_dir == "/tmp/from-env");
  }
  kjit::option::debug::dump_ir(true);
  BOOST_TEST(kjit::current_config().dump_ir);
  BOOST_CHECK_THROW(kjit::option::arch("sm_bad"), kjit::ConfigError);
  BOOST_CHECK_THROW(kjit::option::cache_dir(""), kjit::ConfigError);
  kjit::option::reset();
  BOOST_TEST(!kjit::current_config().dump_ir);
}

BOOST_AUTO_TEST_CASE(settings_table_lists_every_variable)
{
  std::vector<std::string> variables;
  for (const auto& setting : kjit::settings()) {
    BOOST_TEST(setting.variable.rfind("KJIT_", 0) == 0u);
    BOOST_TEST(!setting.description.empty());
    variables.push_back(setting.variable);
  }
  for (const char* required : {"KJIT_CACHE_DIR", "KJIT_DISABLE_CACHE", "KJIT_VERBOSE", "KJIT_ARCH", "KJIT_MIRROR",
                               "KJIT_DUMP_IR", "KJIT_MEMORY_LIMIT", "KJIT_CUDA_HOME"}) {
    BOOST_TEST((std::find(variables.begin(), variables.end(), required) != variables.end()), required);
  }
}

BOOST_AUTO_TEST_CASE(a_default_constructed_config_has_the_table_defaults)
{
  const kjit::Config config{};
  int checked = 0;
  for (const kjit::SettingInfo& info : kjit::settings()) {
    const std::string& d = info.default_text;
    if (info.name == "memory_limit") {
      BOOST_TEST(config.memory_limit == kjit::parse_size(d, info.variable));
    } else if (info.name == "store_map_size") {
      BOOST_TEST(config.store_map_size == kjit::parse_size(d, info.variable));
    } else if (info.name == "max_size") {
      BOOST_TEST(config.max_size == kjit::parse_size(d, info.variable));
    } else if (info.name == "compile_lock_timeout") {
      BOOST_TEST(config.compile_lock_timeout_s == kjit::parse_seconds(d, info.variable));
    } else if (info.name == "arch") {
      BOOST_TEST(config.arch == d);
    } else if (info.name == "disable_cache") {
      BOOST_TEST(config.disable_cache == kjit::parse_bool(d, info.variable));
    } else if (info.name == "mirror") {
      BOOST_TEST(config.mirror == kjit::parse_bool(d, info.variable));
    } else if (info.name == "verbose") {
      BOOST_TEST(config.verbose == kjit::parse_bool(d, info.variable));
    } else if (info.name == "force_ptx") {
      BOOST_TEST(config.force_ptx == kjit::parse_bool(d, info.variable));
    } else {
      continue;
    }
    ++checked;
  }
  BOOST_TEST(checked == 9);
  BOOST_TEST(config.cache_dir.empty());  // no default path: a Cache refuses it (ConfigError)
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(config_docs)

BOOST_AUTO_TEST_CASE(every_setting_is_documented)
{
  const char* root = std::getenv("KJIT_SOURCE_ROOT");
  BOOST_TEST_REQUIRE(root != nullptr);
  std::ifstream in(std::string(root) + "/docs/configuration.md");
  const std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  BOOST_TEST_REQUIRE(!doc.empty());
  for (const auto& setting : kjit::settings()) {
    BOOST_TEST(doc.find("`" + setting.variable + "`") != std::string::npos, setting.variable);
  }
}

BOOST_AUTO_TEST_SUITE_END()
