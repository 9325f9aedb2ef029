// The Redis tier below the store and bundles (KJIT_REMOTE_CACHE): lookups, background uploads,
// compile leases, spread over one or more servers by rendezvous hashing of the key.
#pragma once

#include "tier/tier.hpp"
#include "remote/lease.hpp"
#include "config/remote_url.hpp"

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace kjit::remote {

class Server;

constexpr std::size_t k_max_upload_bytes = 16u << 20;  // larger records are not uploaded
constexpr std::size_t k_max_meta_bytes = 4096;         // a larger meta value is not one of kjit's

// The Redis key of a record: "kjit:v<record format>:<64 hex digits of the key>", so kjit versions
// with different record formats can share a server.
std::string record_name(const util::Sha256& key);
// The Redis key of a key's compile lease: "kjit:lease:v<record format>:<64 hex digits>".
std::string lease_name(const util::Sha256& key);

class RemoteTier : public tier::Tier {
public:
  // Opens nothing yet: hiredis is loaded and a server reached on the first request to it.
  // `urls` is not empty; each key lives on one of them (rendezvous hashing of host:port/db).
  explicit RemoteTier(std::vector<RedisUrl> urls);
  // Waits for the queued uploads (each bounded by the I/O timeouts). Never throws.
  ~RemoteTier() override;

  const std::string& name() const noexcept override;
  // A GET with short timeouts: a record, none, or a failure (server down, circuit open, refused,
  // or a value over k_max_reply_bytes, which is not read and is warned about once per key).
  tier::TierAnswer get(const util::Sha256& key) noexcept override;
  // Fleet-wide single flight for `key` (see acquire_lease): this node compiles (a held lease), or
  // another node's record arrived while waiting at most `wait_ms`, or none (compile anyway).
  // Never throws, but a pthread_cancel() acts in its wait (acquire_lease).
  LeaseAnswer lease(const util::Sha256& key, std::int64_t wait_ms);
  const tier::TierAccounting& accounting() const noexcept override;
  bool keeps_puts() const noexcept override { return true; }
  // Queues `record` (a self-contained record, HeaderStorage::inline_content) for a SET on the
  // upload thread of the key's server. Dropped when read-only, over k_max_upload_bytes or while
  // the circuit is open. A lease on the key dropped after this is released behind the SET (one
  // queue per server), so nodes waiting for it find the record.
  void put(const util::Sha256& key, std::string record) noexcept override;
  // A small fact shared by the fleet beside the records (the toolchain's versions for the key,
  // cache/toolchain.cpp): the value under "kjit:meta:<name>", or nullopt when there is none, it is
  // not a string or over k_max_meta_bytes, or the server can't be reached (one GET with the lookup
  // timeouts). Never throws.
  std::optional<std::string> get_meta(const std::string& name) noexcept;
  // Queues a SET of `value` under "kjit:meta:<name>" on the upload thread, like put(): dropped
  // when read-only or while the circuit is open. Never throws.
  void put_meta(const std::string& name, std::string value) noexcept;
  // Waits for every queued upload and release. Never throws.
  void flush() noexcept;
  // Bytes of records the servers accepted from this tier.
  std::uint64_t bytes_written() const noexcept;
  // The server that holds `key` (for tests and `kjit doctor`).
  const Server& server_for(const util::Sha256& key) const noexcept;

private:
  Server& pick(const util::Sha256& key) const noexcept;
  // The server that rendezvous hashing picks for `digest` (a key's bytes, or a meta row's checksum).
  Server& pick(std::string_view digest) const noexcept;
  std::vector<std::unique_ptr<Server>> m_servers;
  std::string m_name;
  std::mutex m_warned_mutex;
  std::set<util::Sha256> m_warned_keys;  // keys whose value was too large (one warning each)
};

} // namespace kjit::remote
