// A small Redis client over hiredis, which is dlopen()ed on first use (never linked into libkjit).
#pragma once

#include "config/remote_url.hpp"

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace kjit::remote {

// The server could not be reached or answered nothing usable (never leaves the remote tier).
struct RedisFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Reply {
  enum class Kind {
    nil, string, status, integer, error, other,
    too_large,  // a reply over k_max_reply_bytes: not read (`integer` is its declared size, or 0)
  };
  Kind kind = Kind::nil;
  std::string text;        // string, status, error
  long long integer = 0;   // integer, too_large
};

// Milliseconds on the steady clock.
std::int64_t now_ms() noexcept;

constexpr int k_connect_timeout_ms = 500;
// A whole command, from its first byte sent to its reply's last byte read, not each read or write;
// plus, for a large request or reply, its size at k_min_transfer_bytes_per_s (below).
constexpr int k_io_timeout_ms = 1000;
// A record of several MiB over a slow link is still read (16 MiB: 4 s more at most), while a
// short reply trickled a byte at a time costs k_io_timeout_ms.
constexpr std::int64_t k_min_transfer_bytes_per_s = std::int64_t{4} << 20;
// No reply kjit asks for is larger (a record is at most remote_tier.hpp's k_max_upload_bytes):
// a larger value is not read, so a huge value planted under a key costs no memory.
constexpr std::size_t k_max_reply_bytes = (16u << 20) + (64u << 10);

// One connection, opened (AUTH, SELECT) on the first command and again after a failure.
// Not thread-safe: one per thread, or guarded by the caller.
class RedisClient {
public:
  explicit RedisClient(RedisUrl url);
  ~RedisClient();
  RedisClient(const RedisClient&) = delete;
  RedisClient& operator=(const RedisClient&) = delete;

  // Sends one command (binary-safe arguments) and returns the reply; an error reply is a Reply,
  // not a failure, and so is one over k_max_reply_bytes (too_large: the connection is dropped
  // without reading it). Throws RedisFailure if hiredis can't be loaded, the server can't be
  // reached or the command's k_io_timeout_ms passes (the connection is then dropped).
  Reply command(const std::vector<std::string_view>& args);

  const RedisUrl& url() const noexcept { return m_url; }

private:
  struct Connection;
  void connect();
  void send(const std::vector<std::string_view>& args, std::int64_t deadline_ms);
  // The reply, or nullptr with the connection dropped when it is over k_max_reply_bytes
  // (`declared` is then its size, when its header said it). A reply whose header declares a large
  // value may take its size at k_min_transfer_bytes_per_s past `command_deadline_ms`.
  void* receive(const std::vector<std::string_view>& args, std::int64_t command_deadline_ms, long long& declared);
  [[noreturn]] void drop(const std::string& why);
  RedisUrl m_url;
  std::unique_ptr<Connection> m_connection;
};

} // namespace kjit::remote
