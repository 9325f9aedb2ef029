// The Redis tier below the store and bundles (KJIT_REMOTE_CACHE): lookups, background uploads and
// a circuit breaker that stops asking a failing server for a while.
#pragma once

#include "cache/tier.hpp"
#include "remote/url.hpp"

#include <memory>
#include <string>

namespace kjit::remote {

constexpr std::size_t k_max_upload_bytes = 16u << 20;  // larger records are not uploaded
constexpr int k_breaker_ms = 30000;                     // after a failure, the server is not asked for this long
constexpr std::size_t k_max_queued = 256;               // uploads waiting beyond this are dropped

// The Redis key of a record: "kjit:v<record format>:<64 hex digits of the key>", so kjit versions
// with different record formats can share a server.
std::string redis_key(const util::Sha256& key);

class RemoteTier : public cache::Tier {
public:
  // Opens nothing yet: hiredis is loaded and the server reached on the first get() or upload().
  explicit RemoteTier(const RedisUrl& url);
  // Waits for the queued uploads (each bounded by the I/O timeouts). Never throws.
  ~RemoteTier() override;

  const std::string& name() const noexcept override;
  // A GET with short timeouts: a record, none, or a failure (server down, circuit open, refused).
  cache::TierAnswer get(const util::Sha256& key) noexcept override;
  // Queues `record` (a self-contained record, HeaderStorage::inline_content) for a SET on the
  // upload thread. Dropped when read-only, over k_max_upload_bytes or while the circuit is open.
  void upload(const util::Sha256& key, std::string record) noexcept;

private:
  struct State;
  std::unique_ptr<State> m_state;
};

} // namespace kjit::remote
