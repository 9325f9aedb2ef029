// Settings: one table, read from KJIT_* environment variables and overridden by kjit::option::*.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace kjit {

// A snapshot of every setting. Precedence: built-in default < environment < API call. The
// member defaults are the settings table's (but cache_dir, which a Cache refuses empty).
struct Config {
  std::string cache_dir;              // KJIT_CACHE_DIR; resolved, never empty
  bool disable_cache = false;         // KJIT_DISABLE_CACHE: no disk tier at all
  bool verbose = false;               // KJIT_VERBOSE: log each hit/miss/compile
  std::string arch = "auto";          // KJIT_ARCH
  bool mirror = true;                 // KJIT_MIRROR: write programs/<hash>/ after each commit
  bool dump_ir = false;               // KJIT_DUMP_IR: keep extra IRs in the mirror's ir/
  std::size_t memory_limit = std::size_t{256} << 20;  // KJIT_MEMORY_LIMIT: bytes held by the memory tier
  std::string cuda_home;              // KJIT_CUDA_HOME: toolkit root (headers, NVRTC, nvJitLink)
  bool shared_cache = false;          // KJIT_SHARED_CACHE: accept a group-writable/foreign cache dir
  bool repo_local = false;            // KJIT_REPO_LOCAL_CACHE: <git root>/.kjit_cache, like hidet
  std::size_t store_map_size = std::size_t{1} << 30;  // KJIT_STORE_MAP_SIZE: initial LMDB map size in bytes
  bool force_ptx = false;             // KJIT_FORCE_PTX: load PTX (driver JIT) even when a cubin exists
  double compile_lock_timeout_s = 20;  // KJIT_COMPILE_LOCK_TIMEOUT: longest wait for another process's compile
  std::vector<std::string> bundles;   // KJIT_BUNDLE: read-only bundle files searched after the store
  std::string remote_cache;           // KJIT_REMOTE_CACHE: redis:// URLs of a shared tier ("" for none)
  std::string remote_password_file;   // KJIT_REMOTE_PASSWORD_FILE: password of the URLs without one ("" for none)
  std::size_t max_size = std::size_t{5} << 30;  // KJIT_MAX_SIZE: bytes of store + mirror; least recently used evicted beyond
  // No variable: set by tools that only look (kjit list/show/cat/stats/verify/doctor). The store is
  // opened read-only and a damaged one is reported (the Cache runs without it), never moved aside;
  // none is created where there is none yet (Cache::store_exists() is then false).
  bool inspect_only = false;
};

// One row of the settings table, for documentation and `kjit config`.
struct SettingInfo {
  std::string name;         // API name, e.g. "cache_dir"
  std::string variable;     // e.g. "KJIT_CACHE_DIR"
  std::string default_text; // as documented
  std::string description;
};

// The settings table.
const std::vector<SettingInfo>& settings();

// A setting's value in force now and where it came from, for `kjit config`.
struct SettingValue {
  std::string name;      // API name
  std::string variable;  // environment variable
  std::string value;     // as text; secrets (passwords in URLs) are replaced by "***"
  std::string source;    // "default", "environment", "api", or "invalid" (a malformed variable, left out)
};

// Every setting with its current value and source (defaults < environment < API).
// Throws ConfigError like current_config().
std::vector<SettingValue> setting_values();

// The current settings: defaults, then the environment, then API overrides. An empty KJIT_*
// variable is unset. A malformed one (KJIT_VERBOSE=maybe) is left out: its default applies, and
// the log sink gets one warning naming it, once per process and value, so a stray variable on a
// customer's machine never takes the application down. With option::strict_environment(true) it
// throws ConfigError naming the variable instead. An API override that is bad throws ConfigError
// (from the kjit::option call that set it). Thread-safe.
Config current_config();

// Parses a strict boolean: 1/true/yes/on or 0/false/no/off (any case). Throws ConfigError naming
// `variable` otherwise.
bool parse_bool(std::string_view text, const std::string& variable);

// Parses a byte size: "1048576", "64KiB", "256MiB", "2GiB", "1G". Throws ConfigError naming `variable`.
std::size_t parse_size(std::string_view text, const std::string& variable);

// Parses a duration: "20", "20s", "1.5s", "500ms" (seconds when no unit), > 0 and at most a day.
// Throws ConfigError naming `variable`.
double parse_seconds(std::string_view text, const std::string& variable);

// Where log lines go (verbose mode and warnings). The default writes "kjit: <line>\n" to stderr.
// The sink is called from any of kjit's threads, one call at a time; a line it throws for goes to
// stderr (an exception never leaves kjit's threads and destructors). It may call kjit, even
// set_log_sink, on its own thread.
using LogSink = std::function<void(std::string_view line)>;
// Replaces the sink; an empty function restores the default. Thread-safe: waits for a call of the
// old sink on another thread, so the old one is never called once this returns.
void set_log_sink(LogSink sink);

// Programmatic settings in the tilus style: kjit::option::cache_dir("./cache").
// Each validates its value (throws ConfigError) and wins over the environment. Thread-safe.
namespace option {
void cache_dir(const std::string& path);
void disable_cache(bool value);
void verbose(bool value);
void arch(const std::string& arch);
void mirror(bool value);
void memory_limit(std::size_t bytes);
void cuda_home(const std::string& path);
void shared_cache(bool value);
void repo_local_cache(bool value);
void store_map_size(std::size_t bytes);
void force_ptx(bool value);
void compile_lock_timeout(double seconds);
// Read-only bundle files (kjit export) searched after the store, ':'-separated; "" for none.
void bundle(const std::string& paths);
// Redis servers shared by several machines, asked after the store and bundles:
// "redis://[user:password@]host:port[/db][?readonly]", several separated by spaces or commas
// (keys spread over them by hash), "" for none (docs/remote.md).
void remote_cache(const std::string& url);
// A file whose first line is the password of the remote_cache URLs that hold none; "" for none.
// Read when a Cache opens the remote tier; an unreadable file turns the tier off with a warning.
void remote_password_file(const std::string& path);
// Bytes the cache folder's entries (store records and mirror) may take; least recently used
// entries are evicted beyond, checked when entries are written. 0: no limit.
void max_size(std::size_t bytes);
// The cache directory in force now.
std::string get_cache_dir();
// Malformed KJIT_* variables throw ConfigError from current_config(), and so from every call that
// reads the settings (kjit::get, a Cache made without a Config), instead of being left out with
// a warning. For programs that would rather stop than run on defaults (the kjit CLI turns it on).
void strict_environment(bool value);
// Forgets every API override (the environment and defaults apply again) and strict_environment.
void reset();
namespace debug {
void dump_ir(bool value);
}
} // namespace option

} // namespace kjit
