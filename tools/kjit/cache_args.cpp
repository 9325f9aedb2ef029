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
  auto cache = std::make_unique<Cache>(opened);
  return cache->store_exists() ? std::move(cache) : nullptr;  // a folder with no store yet: an empty cache
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

namespace {

// The length of the well-formed UTF-8 sequence at text[at] (RFC 3629: no overlong forms, no
// surrogates, nothing past U+10FFFF), or 0.
std::size_t utf8_length(const std::string& text, std::size_t at)
{
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[at + i]); };
  const unsigned char lead = byte(0);
  std::size_t length = 0;
  if (lead < 0x80) {
    length = 1;
  } else if (lead >= 0xc2 && lead <= 0xdf) {
    length = 2;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3;
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4;
  }
  if (length == 0 || text.size() - at < length) {
    return 0;
  }
  for (std::size_t i = 1; i < length; ++i) {
    if ((byte(i) & 0xc0) != 0x80) {
      return 0;
    }
  }
  // The second byte's range where the lead alone does not settle it.
  if ((lead == 0xe0 && byte(1) < 0xa0) || (lead == 0xed && byte(1) > 0x9f) || (lead == 0xf0 && byte(1) < 0x90) ||
      (lead == 0xf4 && byte(1) > 0x8f)) {
    return 0;
  }
  return length;
}

} // namespace

std::string json_string(const std::string& text)
{
  std::string out = "\"";
  for (std::size_t at = 0; at < text.size();) {
    const char ch = text[at];
    const std::size_t length = utf8_length(text, at);
    if (length == 0) {
      out += "\\ufffd";  // JSON is UTF-8: a byte that isn't (a Latin-1 file name) is U+FFFD
      ++at;
      continue;
    }
    if (length > 1) {
      out.append(text, at, length);
      at += length;
      continue;
    }
    ++at;
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

std::string one_line(std::string text)
{
  for (char& ch : text) {
    const auto byte = static_cast<unsigned char>(ch);
    ch = byte < 0x20 || byte == 0x7f ? '?' : ch;
  }
  return text;
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

unsigned jobs_option(const po::variables_map& vm)
{
  const unsigned jobs = vm["jobs"].as<unsigned>();
  if (jobs > 1024) {
    throw UsageError{"--jobs must be at most 1024 (0: one per core)", ""};
  }
  return jobs;
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
