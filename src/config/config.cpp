// The settings table: each row names a setting, its variable, its default and how to apply a value.
#include "config/config_internal.hpp"

#include <kjit/arch.hpp>
#include <kjit/error.hpp>

#include "config/log.hpp"
#include "config/remote_url.hpp"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>
#include <tuple>
#include <utility>
#include <sys/stat.h>
#include <unistd.h>

namespace kjit {

namespace {

struct Row {
  const char* name;
  const char* variable;
  const char* default_text;  // nullptr: computed (cache_dir)
  const char* description;
  void (*apply)(Config&, std::string_view value, const std::string& variable);
};

std::string git_root_from_cwd()
{
  char buffer[4096];
  if (::getcwd(buffer, sizeof buffer) == nullptr) {
    return {};
  }
  std::string dir = buffer;
  for (;;) {
    struct stat st {};
    if (::stat((dir + "/.git").c_str(), &st) == 0) {
      return dir;
    }
    const auto slash = dir.rfind('/');
    if (slash == std::string::npos || dir == "/") {
      return {};
    }
    dir = slash == 0 ? "/" : dir.substr(0, slash);
  }
}

std::string default_cache_dir()
{
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg == '/') {
    return std::string(xdg) + "/kjit";
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    return std::string(home) + "/.cache/kjit";
  }
  return "/tmp/kjit-" + std::to_string(::getuid());
}

std::string absolute(std::string_view path, const std::string& variable)
{
  if (path.empty()) {
    throw ConfigError(variable, "empty path");
  }
  if (path.find('\0') != std::string_view::npos) {
    // The system reads a path up to its first NUL: the rest would be dropped without a word.
    throw ConfigError(variable, "the path contains a NUL byte");
  }
  if (path.front() == '/') {
    return std::string(path);
  }
  char buffer[4096];
  if (::getcwd(buffer, sizeof buffer) == nullptr) {
    throw ConfigError(variable, "relative path '" + std::string(path) + "' but the working directory is unknown");
  }
  return std::string(buffer) + "/" + std::string(path);
}

const Row k_rows[] = {
  {"cache_dir", "KJIT_CACHE_DIR", nullptr,
   "Cache folder. Default: $XDG_CACHE_HOME/kjit, else ~/.cache/kjit (or <git root>/.kjit_cache in repo-local mode).",
   [](Config& c, std::string_view v, const std::string& var) { c.cache_dir = absolute(v, var); }},
  {"disable_cache", "KJIT_DISABLE_CACHE", "0", "No disk tier: nothing is read from or written to the cache folder.",
   [](Config& c, std::string_view v, const std::string& var) { c.disable_cache = parse_bool(v, var); }},
  {"verbose", "KJIT_VERBOSE", "0", "Log every hit, miss and compile with its time to the log sink.",
   [](Config& c, std::string_view v, const std::string& var) { c.verbose = parse_bool(v, var); }},
  {"arch", "KJIT_ARCH", "auto", "Target arch when the caller does not give one: sm_XY[a|f], compute_XY or auto.",
   [](Config& c, std::string_view v, const std::string& var) {
     try {
       c.arch = Arch::parse(v).str();
     } catch (const ArchError& e) {
       throw ConfigError(var, e.what());
     }
   }},
  {"mirror", "KJIT_MIRROR", "1", "Write each entry to programs/<hash>/ after it is committed.",
   [](Config& c, std::string_view v, const std::string& var) { c.mirror = parse_bool(v, var); }},
  {"debug.dump_ir", "KJIT_DUMP_IR", "0", "Keep extra IRs in the mirror's ir/ folder.",
   [](Config& c, std::string_view v, const std::string& var) { c.dump_ir = parse_bool(v, var); }},
  {"memory_limit", "KJIT_MEMORY_LIMIT", "256MiB", "Bytes the in-process memory tier may hold (LRU beyond).",
   [](Config& c, std::string_view v, const std::string& var) { c.memory_limit = parse_size(v, var); }},
  {"cuda_home", "KJIT_CUDA_HOME", "",
   "CUDA toolkit root for headers, NVRTC and nvJitLink. Empty: $CUDA_HOME, then $CUDA_PATH, then the build's toolkit.",
   [](Config& c, std::string_view v, const std::string& var) { c.cuda_home = v.empty() ? "" : absolute(v, var); }},
  {"shared_cache", "KJIT_SHARED_CACHE", "0",
   "Accept a cache folder owned by another user or writable by group/others.",
   [](Config& c, std::string_view v, const std::string& var) { c.shared_cache = parse_bool(v, var); }},
  {"repo_local_cache", "KJIT_REPO_LOCAL_CACHE", "0",
   "Default the cache folder to <git root>/.kjit_cache when the working directory is in a git repository.",
   [](Config& c, std::string_view v, const std::string& var) { c.repo_local = parse_bool(v, var); }},
  {"store_map_size", "KJIT_STORE_MAP_SIZE", "1GiB", "Initial LMDB map size; the map grows by doubling when full.",
   [](Config& c, std::string_view v, const std::string& var) {
     c.store_map_size = parse_size(v, var);
     if (c.store_map_size < 32768) {
       throw ConfigError(var, "must be at least 32KiB");
     }
   }},
  {"force_ptx", "KJIT_FORCE_PTX", "0",
   "Load the PTX and let the driver JIT it even when a cubin exists (testing the PTX fallback).",
   [](Config& c, std::string_view v, const std::string& var) { c.force_ptx = parse_bool(v, var); }},
  {"compile_lock_timeout", "KJIT_COMPILE_LOCK_TIMEOUT", "20s",
   "Longest wait for another process compiling the same kernel; then this process compiles it too.",
   [](Config& c, std::string_view v, const std::string& var) { c.compile_lock_timeout_s = parse_seconds(v, var); }},
  {"max_size", "KJIT_MAX_SIZE", "5GiB",
   "Bytes the entries (store records and mirror) may take; least recently used entries are evicted beyond. 0: no limit.",
   [](Config& c, std::string_view v, const std::string& var) { c.max_size = parse_size(v, var); }},
  {"bundle", "KJIT_BUNDLE", "",
   "Read-only bundle files (made by kjit export), ':'-separated, searched after the store; a hit is promoted.",
   [](Config& c, std::string_view v, const std::string& var) {
     c.bundles.clear();
     while (!v.empty()) {
       const auto colon = v.find(':');
       const std::string_view part = v.substr(0, colon);
       if (!part.empty()) {
         c.bundles.push_back(absolute(part, var));
       }
       v = colon == std::string_view::npos ? std::string_view() : v.substr(colon + 1);
     }
   }},
  {"remote_cache", "KJIT_REMOTE_CACHE", "",
   "Shared Redis tier after the store and bundles: redis://[user:password@]host:port[/db][?readonly] (docs/remote.md).",
   [](Config& c, std::string_view v, const std::string& var) {
     if (!v.empty()) {
       remote::parse_urls(v, var);  // checked now; the tier parses it again when it opens
     }
     c.remote_cache = std::string(v);
   }},
  {"remote_password_file", "KJIT_REMOTE_PASSWORD_FILE", "",
   "File whose first line is the password of the KJIT_REMOTE_CACHE servers whose URL has none (docs/remote.md).",
   [](Config& c, std::string_view v, const std::string& var) {
     c.remote_password_file = v.empty() ? std::string() : absolute(v, var);
   }},
};

struct Overrides {
  std::mutex mutex;
  std::map<std::string, std::string> values;  // row name → value text
  std::uint64_t generation = 0;
};

Overrides& overrides()
{
  static Overrides instance;
  return instance;
}

const Row& row(std::string_view name)
{
  for (const Row& r : k_rows) {
    if (name == r.name) {
      return r;
    }
  }
  throw ConfigError(std::string(name), "no such setting");
}

void set_override(const char* name, std::string value)
{
  const Row& r = row(name);
  Config scratch;
  r.apply(scratch, value, std::string("kjit::option::") + name);  // validate now, not at first use
  Overrides& o = overrides();
  std::lock_guard lock(o.mutex);
  o.values[name] = std::move(value);
  ++o.generation;
}

} // namespace

bool parse_bool(std::string_view text, const std::string& variable)
{
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char ch) { return std::tolower(ch); });
  if (lower == "1" || lower == "true" || lower == "yes" || lower == "on") {
    return true;
  }
  if (lower == "0" || lower == "false" || lower == "no" || lower == "off") {
    return false;
  }
  throw ConfigError(variable, "'" + std::string(text) + "' is not a boolean (use 1/true/yes/on or 0/false/no/off)");
}

std::size_t parse_size(std::string_view text, const std::string& variable)
{
  std::size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) {
    ++digits;
  }
  const std::string_view unit = text.substr(digits);
  static const std::pair<const char*, std::size_t> k_units[] = {
    {"", 1},          {"B", 1},           {"K", 1u << 10},    {"KiB", 1u << 10}, {"M", 1u << 20},
    {"MiB", 1u << 20}, {"G", 1ull << 30}, {"GiB", 1ull << 30}, {"T", 1ull << 40}, {"TiB", 1ull << 40},
  };
  // Any size_t (kjit::option::max_size(SIZE_MAX) writes 20 digits); more is not a size.
  std::size_t number = 0;
  bool overflow = false;
  for (std::size_t i = 0; i < digits; ++i) {
    const auto digit = static_cast<std::size_t>(text[i] - '0');
    overflow = overflow || number > (SIZE_MAX - digit) / 10;
    number = overflow ? 0 : number * 10 + digit;
  }
  if (digits == 0 || overflow) {
    throw ConfigError(variable, "'" + std::string(text) + "' is not a size (e.g. 1048576, 64KiB, 256MiB, 2GiB)");
  }
  for (const auto& [name, scale] : k_units) {
    if (unit == name) {
      if (number > SIZE_MAX / scale) {
        break;
      }
      return number * scale;
    }
  }
  throw ConfigError(variable, "'" + std::string(text) + "' is not a size (e.g. 1048576, 64KiB, 256MiB, 2GiB)");
}

double parse_seconds(std::string_view text, const std::string& variable)
{
  std::string number(text);
  double scale = 1.0;
  if (number.size() > 2 && number.compare(number.size() - 2, 2, "ms") == 0) {
    number.resize(number.size() - 2);
    scale = 0.001;
  } else if (number.size() > 1 && number.back() == 's') {
    number.pop_back();
  }
  const bool digits = !number.empty() && std::all_of(number.begin(), number.end(), [](unsigned char ch) {
    return std::isdigit(ch) || ch == '.';
  }) && std::count(number.begin(), number.end(), '.') <= 1 && number != ".";
  const double seconds = digits ? std::strtod(number.c_str(), nullptr) * scale : 0.0;
  if (!digits || seconds <= 0.0 || seconds > 86400.0) {
    throw ConfigError(variable, "'" + std::string(text) + "' is not a duration (e.g. 20, 20s, 1.5s, 500ms; > 0, at most a day)");
  }
  return seconds;
}

const std::vector<SettingInfo>& settings()
{
  static const std::vector<SettingInfo> table = [] {
    std::vector<SettingInfo> out;
    for (const Row& r : k_rows) {
      out.push_back({r.name, r.variable, r.default_text != nullptr ? r.default_text : "(see description)", r.description});
    }
    return out;
  }();
  return table;
}

std::atomic<bool> g_strict_environment{false};

// One warning per variable and value in a process: current_config() runs on every get().
void warn_left_out(const ConfigError& error, const std::string& value)
{
  static std::mutex mutex;
  static std::set<std::string> warned;
  {
    std::lock_guard lock(mutex);
    if (!warned.insert(error.variable() + "=" + value).second) {
      return;
    }
  }
  log::line(std::string(error.what()) + "; left out: its default is used");
}

Config current_config()
{
  Config config;
  bool cache_dir_given = false;
  for (const Row& r : k_rows) {
    if (r.default_text != nullptr) {
      r.apply(config, r.default_text, r.variable);
    }
    const char* value = std::getenv(r.variable);
    const bool strict = g_strict_environment.load(std::memory_order_relaxed);
    if (value == nullptr || (*value == '\0' && !strict)) {
      // An empty variable is an unset one, but where strictness is asked for (the CLI, where
      // `KJIT_CACHE_DIR=$UNSET kjit clear` must not clear the default folder), an error.
      continue;
    }
    try {
      r.apply(config, value, r.variable);
      cache_dir_given |= std::string_view(r.name) == "cache_dir";
    } catch (const ConfigError& error) {
      if (strict) {
        throw;
      }
      warn_left_out(error, value);
      if (r.default_text != nullptr) {
        r.apply(config, r.default_text, r.variable);  // apply may have changed the field before it threw
      }
    }
  }
  {
    Overrides& o = overrides();
    std::lock_guard lock(o.mutex);
    for (const auto& [name, value] : o.values) {
      const Row& r = row(name);
      r.apply(config, value, std::string("kjit::option::") + name);
      cache_dir_given |= name == "cache_dir";
    }
  }
  if (!cache_dir_given) {
    const std::string root = config.repo_local ? git_root_from_cwd() : std::string();
    config.cache_dir = root.empty() ? default_cache_dir() : root + "/.kjit_cache";
  }
  return config;
}

void apply_setting(Config& config, std::string_view name, std::string_view value)
{
  const Row& r = row(name);
  Config changed = config;  // apply may change its field before it throws: the caller's stays whole
  r.apply(changed, value, std::string(name));
  config = std::move(changed);
}

std::uint64_t config_generation()
{
  Overrides& o = overrides();
  std::lock_guard lock(o.mutex);
  return o.generation;
}

void check_config(const Config& config)
{
  try {
    std::ignore = Arch::parse(config.arch);
  } catch (const ArchError& e) {
    throw ConfigError("arch", std::string("Config::arch: ") + e.what());
  }
  const double timeout = config.compile_lock_timeout_s;
  if (!(timeout > 0.0 && timeout <= 86400.0)) {  // NaN fails too
    throw ConfigError("compile_lock_timeout", "Config::compile_lock_timeout_s is " + std::to_string(timeout) +
                                                " s: it must be > 0 and at most a day (86400)");
  }
  // Paths the system would cut at a NUL byte (the table's parsers refuse them; a Config built by
  // hand skipped those).
  const auto no_nul = [](const std::string& path, const char* name, const char* field) {
    if (path.find('\0') != std::string::npos) {
      throw ConfigError(name, std::string("Config::") + field + " contains a NUL byte");
    }
  };
  no_nul(config.cache_dir, "cache_dir", "cache_dir");
  no_nul(config.cuda_home, "cuda_home", "cuda_home");
  no_nul(config.remote_password_file, "remote_password_file", "remote_password_file");
  for (const std::string& bundle : config.bundles) {
    no_nul(bundle, "bundle", "bundles");
  }
  if (config.store_map_size < 32768) {
    throw ConfigError("store_map_size", "Config::store_map_size is " + std::to_string(config.store_map_size) +
                                          " bytes: it must be at least 32KiB");
  }
}

std::string compiler_environment_now()
{
  std::string out;
  for (const char* variable : k_compiler_environment_variables) {
    if (const char* value = std::getenv(variable); value != nullptr) {
      out += std::string(variable) + "=" + value + "\n";
    }
  }
  return out;
}

std::string compiler_environment()
{
  // Once per process, as NVRTC reads it once, when it is loaded: a later setenv() changes neither.
  static const std::string once = compiler_environment_now();
  return once;
}

namespace {

// Hides the password of a URL ("redis://user:secret@host" → "redis://user:***@host").
std::string redact(std::string value)
{
  // Every URL of a list: "scheme://user:password@host" → "scheme://user:***@host".
  for (auto scheme = value.find("://"); scheme != std::string::npos; scheme = value.find("://", scheme + 3)) {
    const auto end = std::min(value.find_first_of(" \t\n,", scheme), value.size());
    const auto at = value.rfind('@', end);
    const auto colon = value.find(':', scheme + 3);
    if (at != std::string::npos && at > scheme && colon < at) {
      value.replace(colon + 1, at - colon - 1, "***");
    }
  }
  return value;
}

} // namespace

std::vector<SettingValue> setting_values()
{
  const Config config = current_config();  // validates every layer
  std::map<std::string, std::string> api;
  {
    Overrides& o = overrides();
    std::lock_guard lock(o.mutex);
    api = o.values;
  }
  std::vector<SettingValue> out;
  for (const Row& r : k_rows) {
    SettingValue value{r.name, r.variable, r.default_text != nullptr ? r.default_text : "", "default"};
    if (const char* env = std::getenv(r.variable); env != nullptr && *env != '\0') {
      value.value = env;
      value.source = "environment";
      try {
        Config scratch;
        r.apply(scratch, env, r.variable);
      } catch (const ConfigError&) {
        value.source = "invalid";  // left out (current_config() threw for it when strict)
      }
    }
    if (const auto it = api.find(r.name); it != api.end()) {
      value.value = it->second;
      value.source = "api";
    }
    if (std::string_view(r.name) == "cache_dir") {
      value.value = config.cache_dir;
    }
    const std::string lower_variable = r.variable;
    const bool secret = lower_variable.find("PASSWORD") != std::string::npos &&
                        lower_variable.find("_FILE") == std::string::npos;  // a file's path is shown
    value.value = secret && !value.value.empty() ? "***" : redact(value.value);
    out.push_back(std::move(value));
  }
  return out;
}

namespace option {
void cache_dir(const std::string& path) { set_override("cache_dir", path); }
void disable_cache(bool value) { set_override("disable_cache", value ? "1" : "0"); }
void verbose(bool value) { set_override("verbose", value ? "1" : "0"); }
void arch(const std::string& arch) { set_override("arch", arch); }
void mirror(bool value) { set_override("mirror", value ? "1" : "0"); }
void memory_limit(std::size_t bytes) { set_override("memory_limit", std::to_string(bytes)); }
void cuda_home(const std::string& path) { set_override("cuda_home", path); }
void shared_cache(bool value) { set_override("shared_cache", value ? "1" : "0"); }
void repo_local_cache(bool value) { set_override("repo_local_cache", value ? "1" : "0"); }
void store_map_size(std::size_t bytes) { set_override("store_map_size", std::to_string(bytes)); }
void max_size(std::size_t bytes) { set_override("max_size", std::to_string(bytes)); }
void force_ptx(bool value) { set_override("force_ptx", value ? "1" : "0"); }
void compile_lock_timeout(double seconds)
{
  // Fixed-point with every digit a duration can use: std::to_string's six decimals made 1e-7 "0.000000", refused.
  char text[64];
  std::snprintf(text, sizeof text, "%.17f", seconds);
  set_override("compile_lock_timeout", text);
}
void bundle(const std::string& paths) { set_override("bundle", paths); }
void remote_cache(const std::string& url) { set_override("remote_cache", url); }
void remote_password_file(const std::string& path) { set_override("remote_password_file", path); }
std::string get_cache_dir() { return current_config().cache_dir; }
void strict_environment(bool value)
{
  g_strict_environment.store(value, std::memory_order_relaxed);
  Overrides& o = overrides();
  std::lock_guard lock(o.mutex);
  ++o.generation;  // the settings in force may differ now
}
void reset()
{
  g_strict_environment.store(false, std::memory_order_relaxed);
  Overrides& o = overrides();
  std::lock_guard lock(o.mutex);
  o.values.clear();
  ++o.generation;
}
namespace debug {
void dump_ir(bool value) { set_override("debug.dump_ir", value ? "1" : "0"); }
} // namespace debug
} // namespace option

} // namespace kjit
