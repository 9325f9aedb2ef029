// KJIT_REMOTE_CACHE: redis://[user:password@]host:port[/db][?readonly], parsed and checked.
#pragma once

#include <string>
#include <string_view>

namespace kjit::remote {

struct RedisUrl {
  std::string user;      // "" for the legacy AUTH with a password only
  std::string password;  // "" for no AUTH; never logged (display() hides it)
  std::string host;
  int port = 6379;
  int db = 0;
  bool readonly = false;  // ?readonly: look up only, never write
  // The URL with the password replaced by "***", for log lines and `kjit config`.
  std::string display() const;
};

// Parses `text`. Throws ConfigError naming `variable` for anything that is not such a URL (another
// scheme, no host, a port outside 1..65535, a db that is not a number, an unknown query).
RedisUrl parse_url(std::string_view text, const std::string& variable);

} // namespace kjit::remote
