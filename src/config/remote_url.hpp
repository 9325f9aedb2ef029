// KJIT_REMOTE_CACHE: one or more redis://[user:password@]host:port[/db][?readonly], parsed and checked.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kjit {
struct Config;
}

namespace kjit::remote {

struct RedisUrl {
  std::string user;      // "" for the legacy AUTH with a password only; percent-decoded
  std::string password;  // "" for no AUTH; percent-decoded (%40 is '@'); never logged (display() hides it)
  std::string host;
  int port = 6379;
  int db = 0;
  bool readonly = false;  // ?readonly: look up only, never write
  // The URL with the password replaced by "***", for log lines and `kjit config`.
  std::string display() const;
  // "host:port/db": names the server without credentials or options (a list's duplicates, hashing).
  std::string server() const;
};

// Parses `text`. Throws ConfigError naming `variable` for anything that is not such a URL (another
// scheme, no host, a port outside 1..65535, a db that is not a number, an unknown query).
RedisUrl parse_url(std::string_view text, const std::string& variable);

// One or more URLs separated by spaces or commas (each key then lives on one of them). Throws
// ConfigError naming `variable` for a bad URL, none at all, or one server (host:port/db) twice.
std::vector<RedisUrl> parse_urls(std::string_view text, const std::string& variable);

// The servers of config.remote_cache, with the password of KJIT_REMOTE_PASSWORD_FILE (its first
// line) given to each URL that names none. Empty, with `why` (naming the file, never its content),
// when the file can't be read or its first line is empty. Throws ConfigError for a bad list.
std::vector<RedisUrl> configured_urls(const Config& config, std::string& why);

} // namespace kjit::remote
