// A small Redis client over hiredis, which is dlopen()ed on first use (never linked into libkjit).
#pragma once

#include "remote/url.hpp"

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
  enum class Kind { nil, string, status, integer, error, other };
  Kind kind = Kind::nil;
  std::string text;        // string, status, error
  long long integer = 0;   // integer
};

constexpr int k_connect_timeout_ms = 500;
constexpr int k_io_timeout_ms = 1000;

// One connection, opened (AUTH, SELECT) on the first command and again after a failure.
// Not thread-safe: one per thread, or guarded by the caller.
class RedisClient {
public:
  explicit RedisClient(RedisUrl url);
  ~RedisClient();
  RedisClient(const RedisClient&) = delete;
  RedisClient& operator=(const RedisClient&) = delete;

  // Sends one command (binary-safe arguments) and returns the reply; an error reply is a Reply,
  // not a failure. Throws RedisFailure if hiredis can't be loaded, the server can't be reached or
  // a timeout passes (the connection is then dropped).
  Reply command(const std::vector<std::string_view>& args);

  const RedisUrl& url() const noexcept { return m_url; }

private:
  struct Connection;
  void connect();
  RedisUrl m_url;
  std::unique_ptr<Connection> m_connection;
};

} // namespace kjit::remote
