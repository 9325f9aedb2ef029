// The documented defaults are the code's defaults: docs/configuration.md's table is read and each
// default compared with the settings table and with current_config() without KJIT_* variables.
// Every C++ line the docs show is in doc_snippets.cpp, which compiles and runs them.
#include <boost/test/unit_test.hpp>

#include "fixture.hpp"

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <unistd.h>

using namespace kjit::test;

namespace {

// Every KJIT_* variable and XDG_CACHE_HOME/HOME unset for one scope, restored after.
class CleanEnvironment {
public:
  CleanEnvironment()
  {
    for (char** entry = environ; *entry != nullptr; ++entry) {
      const std::string text = *entry;
      const std::string name = text.substr(0, text.find('='));
      if (name.rfind("KJIT_", 0) == 0 || name == "XDG_CACHE_HOME" || name == "HOME") {
        m_saved[name] = text.substr(text.find('=') + 1);
      }
    }
    for (const auto& [name, value] : m_saved) {
      ::unsetenv(name.c_str());
    }
  }
  ~CleanEnvironment()
  {
    for (const char* name : {"XDG_CACHE_HOME", "HOME"}) {
      ::unsetenv(name);
    }
    for (const auto& [name, value] : m_saved) {
      ::setenv(name.c_str(), value.c_str(), 1);
    }
  }
  CleanEnvironment(const CleanEnvironment&) = delete;
  CleanEnvironment& operator=(const CleanEnvironment&) = delete;

private:
  std::map<std::string, std::string> m_saved;
};

// variable → the default column of docs/configuration.md's settings table (backticks removed
// where the whole cell is one code span).
std::map<std::string, std::string> documented_defaults()
{
  const char* root = std::getenv("KJIT_SOURCE_ROOT");
  BOOST_TEST_REQUIRE(root != nullptr);
  std::istringstream lines(read_text(std::string(root) + "/docs/configuration.md"));
  std::map<std::string, std::string> defaults;
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("| `option::", 0) != 0) {
      continue;
    }
    std::vector<std::string> cells;
    std::size_t start = 1;
    for (std::size_t bar = line.find(" | ", start); bar != std::string::npos; bar = line.find(" | ", start)) {
      cells.push_back(line.substr(start + 1, bar - start - 1));
      start = bar + 2;
    }
    BOOST_TEST_REQUIRE(cells.size() >= 3u, line);
    std::string variable = cells[1];
    std::string value = cells[2];
    const auto strip = [](std::string& cell) {
      if (cell.size() >= 2 && cell.front() == '`' && cell.back() == '`' &&
          cell.find('`', 1) == cell.size() - 1) {
        cell = cell.substr(1, cell.size() - 2);
      }
    };
    strip(variable);
    strip(value);
    defaults[variable] = value;
  }
  return defaults;
}

// The lines of a text, white space trimmed at both ends, blank ones left out.
std::vector<std::string> trimmed_lines(const std::string& text)
{
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const auto first = line.find_first_not_of(" \t");
    if (first != std::string::npos) {
      lines.push_back(line.substr(first, line.find_last_not_of(" \t") - first + 1));
    }
  }
  return lines;
}

} // namespace

BOOST_AUTO_TEST_SUITE(docs)

// tests/unit/doc_snippets.cpp compiles every ```cpp block of README.md and docs/*.md (as C++17,
// without a warning) and runs what needs no GPU: each documented line must be in it, so a snippet
// edited in the docs is compiled there too.
BOOST_AUTO_TEST_CASE(every_documented_cpp_line_is_compiled_by_doc_snippets)
{
  const char* root = std::getenv("KJIT_SOURCE_ROOT");
  BOOST_TEST_REQUIRE(root != nullptr);
  const std::vector<std::string> compiled = trimmed_lines(read_text(std::string(root) + "/tests/unit/doc_snippets.cpp"));
  const std::set<std::string> known(compiled.begin(), compiled.end());
  std::vector<std::string> docs{std::string(root) + "/README.md"};
  for (const auto& file : std::filesystem::directory_iterator(std::string(root) + "/docs")) {
    if (file.path().extension() == ".md") {
      docs.push_back(file.path().string());
    }
  }
  std::size_t lines = 0;
  for (const std::string& doc : docs) {
    bool in_cpp = false;
    for (const std::string& line : trimmed_lines(read_text(doc))) {
      if (line.rfind("```", 0) == 0) {
        in_cpp = !in_cpp && (line == "```cpp" || line == "```c++");
      } else if (in_cpp) {
        ++lines;
        BOOST_TEST(known.count(line) == 1u, doc << ": not in doc_snippets.cpp: " << line);
      }
    }
  }
  BOOST_TEST(lines > 50u);  // README's usage, embedding.md's four blocks, scripts.md's example
}

BOOST_AUTO_TEST_CASE(every_setting_is_documented_with_the_default_of_the_settings_table)
{
  const auto documented = documented_defaults();
  BOOST_TEST(documented.size() == kjit::settings().size());
  for (const kjit::SettingInfo& info : kjit::settings()) {
    BOOST_TEST_CONTEXT(info.variable)
    {
      BOOST_TEST_REQUIRE(documented.count(info.variable) == 1u);
      if (info.variable != "KJIT_CACHE_DIR") {
        const std::string doc = documented.at(info.variable);
        BOOST_TEST((doc == info.default_text || (doc == "empty" && info.default_text.empty())), doc);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(the_documented_defaults_are_what_a_config_holds_without_variables)
{
  const auto doc = documented_defaults();
  const CleanEnvironment clean;
  ::setenv("HOME", "/home/docs-test", 1);
  const kjit::Config config = kjit::current_config();
  const std::map<std::string, std::function<bool(const std::string&)>> holds{
    {"KJIT_DISABLE_CACHE", [&](const std::string& v) { return kjit::parse_bool(v, "doc") == config.disable_cache; }},
    {"KJIT_VERBOSE", [&](const std::string& v) { return kjit::parse_bool(v, "doc") == config.verbose; }},
    {"KJIT_ARCH", [&](const std::string& v) { return v == config.arch; }},
    {"KJIT_MIRROR", [&](const std::string& v) { return kjit::parse_bool(v, "doc") == config.mirror; }},
    {"KJIT_DUMP_IR", [&](const std::string& v) { return kjit::parse_bool(v, "doc") == config.dump_ir; }},
    {"KJIT_MEMORY_LIMIT", [&](const std::string& v) { return kjit::parse_size(v, "doc") == config.memory_limit; }},
    {"KJIT_CUDA_HOME", [&](const std::string& v) { return v == "empty" && config.cuda_home.empty(); }},
    {"KJIT_SHARED_CACHE", [&](const std::string& v) { return kjit::parse_bool(v, "doc") == config.shared_cache; }},
    {"KJIT_REPO_LOCAL_CACHE", [&](const std::string& v) { return kjit::parse_bool(v, "doc") == config.repo_local; }},
    {"KJIT_FORCE_PTX", [&](const std::string& v) { return kjit::parse_bool(v, "doc") == config.force_ptx; }},
    {"KJIT_STORE_MAP_SIZE",
     [&](const std::string& v) { return kjit::parse_size(v, "doc") == config.store_map_size; }},
    {"KJIT_COMPILE_LOCK_TIMEOUT",
     [&](const std::string& v) { return v.back() == 's' && std::stod(v) == config.compile_lock_timeout_s; }},
    {"KJIT_BUNDLE", [&](const std::string& v) { return v == "empty" && config.bundles.empty(); }},
    {"KJIT_MAX_SIZE", [&](const std::string& v) { return kjit::parse_size(v, "doc") == config.max_size; }},
    {"KJIT_REMOTE_CACHE", [&](const std::string& v) { return v == "empty" && config.remote_cache.empty(); }},
    {"KJIT_REMOTE_PASSWORD_FILE",
     [&](const std::string& v) { return v == "empty" && config.remote_password_file.empty(); }},
  };
  for (const auto& [variable, value] : doc) {
    if (variable == "KJIT_CACHE_DIR") {
      continue;
    }
    BOOST_TEST_CONTEXT(variable)
    {
      BOOST_TEST_REQUIRE(holds.count(variable) == 1u);
      BOOST_TEST(holds.at(variable)(value), value);
    }
  }
}

// "`$XDG_CACHE_HOME/kjit` when `XDG_CACHE_HOME` is absolute, else `$HOME/.cache/kjit`; without
// `HOME`, `/tmp/kjit-<uid>`": each clause is checked against the code.
BOOST_AUTO_TEST_CASE(the_documented_cache_folder_default_is_the_code_s)
{
  const std::string doc = documented_defaults().at("KJIT_CACHE_DIR");
  const CleanEnvironment clean;
  BOOST_TEST(doc.find("`$XDG_CACHE_HOME/kjit` when `XDG_CACHE_HOME` is absolute") != std::string::npos, doc);
  ::setenv("HOME", "/home/docs-test", 1);
  ::setenv("XDG_CACHE_HOME", "/xdg/cache", 1);
  BOOST_TEST(kjit::current_config().cache_dir == "/xdg/cache/kjit");

  BOOST_TEST(doc.find("else `$HOME/.cache/kjit`") != std::string::npos, doc);
  ::setenv("XDG_CACHE_HOME", "relative/cache", 1);
  BOOST_TEST(kjit::current_config().cache_dir == "/home/docs-test/.cache/kjit");
  ::unsetenv("XDG_CACHE_HOME");
  BOOST_TEST(kjit::current_config().cache_dir == "/home/docs-test/.cache/kjit");

  BOOST_TEST(doc.find("without `HOME`, `/tmp/kjit-<uid>`") != std::string::npos, doc);
  ::unsetenv("HOME");
  BOOST_TEST(kjit::current_config().cache_dir == "/tmp/kjit-" + std::to_string(::getuid()));
  ::setenv("HOME", "", 1);
  BOOST_TEST(kjit::current_config().cache_dir == "/tmp/kjit-" + std::to_string(::getuid()));
}

// docs/embedding.md, "Where a lookup's binary came from", lists every Source a lookup reports (it
// left out `remote` and said there was no remote tier).
BOOST_AUTO_TEST_CASE(the_documented_lookup_sources_are_every_source)
{
  const char* root = std::getenv("KJIT_SOURCE_ROOT");
  BOOST_TEST_REQUIRE(root != nullptr);
  const std::string text = read_text(std::string(root) + "/docs/embedding.md");
  const auto start = text.find("(`Source::memory`");
  BOOST_TEST_REQUIRE(start != std::string::npos);
  const std::string list = text.substr(start, text.find(')', start) - start);
  const kjit::Source sources[] = {kjit::Source::memory, kjit::Source::disk,     kjit::Source::bundle,
                                  kjit::Source::remote, kjit::Source::compiled, kjit::Source::compiled_elsewhere};
  const char* const names[] = {"memory", "disk", "bundle", "remote", "compiled", "compiled_elsewhere"};
  for (std::size_t i = 0; i < std::size(sources); ++i) {
    BOOST_TEST(std::string(kjit::to_string(sources[i])) != "unknown");
    const bool named = list.find(std::string("`") + names[i] + "`") != std::string::npos ||
                       list.find(std::string("`Source::") + names[i] + "`") != std::string::npos;
    BOOST_TEST(named, names[i] << " is not in " << list);
  }
  // No enumerator after these: the list above is the whole enum.
  BOOST_TEST(std::string(kjit::to_string(static_cast<kjit::Source>(std::size(sources)))) == "unknown");
  BOOST_TEST(text.find("There is no remote tier") == std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
