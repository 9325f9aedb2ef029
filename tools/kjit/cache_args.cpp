// Helpers shared by the cache-operating subcommands.
#include "cache_args.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <sys/stat.h>
#include <unistd.h>

namespace kjit::cli {

void add_cache_dir_option(po::options_description& visible)
{
  visible.add_options()("cache-dir", po::value<std::string>(),
                        "cache folder (default: KJIT_CACHE_DIR, else ~/.cache/kjit)");
}

std::unique_ptr<Cache> open_cache(const po::variables_map& vm, Access access)
{
  if (vm.count("cache-dir") != 0) {
    option::cache_dir(vm["cache-dir"].as<std::string>());
  }
  const Config config = current_config();
  struct stat st {};
  if (access != Access::write && (config.disable_cache || ::stat(config.cache_dir.c_str(), &st) != 0)) {
    return nullptr;
  }
  if (access == Access::write && config.disable_cache) {  // (read and change returned above)
    throw Error("the disk cache is disabled (KJIT_DISABLE_CACHE)");
  }
  Config opened = config;
  opened.inspect_only = access == Access::read;  // looking changes nothing, a damaged store included
  return std::make_unique<Cache>(opened);
}

void require_writable(const Cache& cache)
{
  if (!cache.writable()) {
    throw StoreError("the cache at " + cache.config().cache_dir +
                       (cache.has_disk_tier() ? " is read-only" : " has no store this process can open (read-only)"),
                     EROFS);
  }
}

bool could_write(const Cache& cache)
{
  return cache.writable() || (cache.has_disk_tier() && ::access(cache.store_path().c_str(), W_OK) == 0 &&
                              ::access((cache.store_path() + "/data.mdb").c_str(), W_OK) == 0);
}

std::string json_string(const std::string& text)
{
  std::string out = "\"";
  for (const char ch : text) {
    switch (ch) {
    case '"': out += "\\\""; break;
    case '\\': out += "\\\\"; break;
    case '\n': out += "\\n"; break;
    case '\t': out += "\\t"; break;
    case '\r': out += "\\r"; break;
    default:
      if (static_cast<unsigned char>(ch) < 0x20) {
        char escaped[8];
        std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned>(ch));
        out += escaped;
      } else {
        out += ch;
      }
    }
  }
  return out + "\"";
}

std::string format_time(std::int64_t unix_time)
{
  const std::time_t time = static_cast<std::time_t>(unix_time);
  std::tm local{};
  ::localtime_r(&time, &local);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M", &local);
  return text;
}

std::string format_bytes(std::size_t bytes)
{
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, unit == 0 ? "%.0f %s" : "%.1f %s", value, units[unit]);
  return text;
}

std::int64_t parse_age(const std::string& text, const std::string& usage)
{
  std::size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits])) != 0) {
    ++digits;
  }
  const std::string unit = text.substr(digits);
  std::int64_t scale = 0;
  if (unit.empty() || unit == "s") {
    scale = 1;
  } else if (unit == "m") {
    scale = 60;
  } else if (unit == "h") {
    scale = 3600;
  } else if (unit == "d") {
    scale = 86400;
  } else if (unit == "w") {
    scale = 7 * 86400;
  }
  if (digits == 0 || digits > 9 || scale == 0) {
    throw UsageError{"'" + text + "' is not an age (e.g. 90s, 15m, 12h, 30d, 2w)", usage};
  }
  return std::stoll(text.substr(0, digits)) * scale;
}

const Colours& colours()
{
  static const Colours c = [] {
    const char* no_color = std::getenv("NO_COLOR");
    const bool on = ::isatty(STDOUT_FILENO) != 0 && (no_color == nullptr || *no_color == '\0');
    return on ? Colours{"\033[32m", "\033[33m", "\033[31m", "\033[0m"} : Colours{"", "", "", ""};
  }();
  return c;
}

} // namespace kjit::cli
