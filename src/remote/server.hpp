// One Redis server of the remote tier: its lookup connection, circuit breaker, upload thread and
// compile leases. The tier spreads keys over one or more of these (remote_tier.hpp).
#pragma once

#include "remote/redis.hpp"
#include "config/remote_url.hpp"
#include "util/fork_safe.hpp"

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>
#include <sys/types.h>

namespace kjit::remote {

constexpr int k_breaker_ms = 30000;        // after a failure, the server is not asked for this long
constexpr std::size_t k_max_queued = 256;  // uploads waiting beyond this are dropped (their leases are still released)
// Records waiting beyond this many bytes are dropped too: 256 records of up to 16 MiB would be 4 GiB.
constexpr std::size_t k_max_queued_bytes = 64u << 20;

// What the upload thread does for one key: SET the record (if any), then release the lease (if any).
struct UploadItem {
  std::string record_name;
  std::optional<std::string> record;
  std::string lease_name;  // "" for none
  std::string token;      // the lease's value, released only if it still holds it
};

// Whether `reply` is Redis's answer to a command on a key that holds another type (a hash, a
// list…): a fault of that key's value, not of the server.
bool is_wrong_type(const Reply& reply) noexcept;

class Server {
public:
  explicit Server(RedisUrl url);
  // Writes what is queued (each command bounded by the I/O timeouts). Never throws.
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  const RedisUrl& url() const noexcept { return m_reader.url(); }
  // "remote redis://host:port/db" with the password masked: names the server in log lines.
  const std::string& name() const noexcept { return m_name; }

  // Whether a failure less than k_breaker_ms ago stops requests now.
  bool circuit_open() const noexcept;
  // After a failure: stops asking for k_breaker_ms and warns once per outage.
  void fail(const std::string& why) noexcept;

  // What an error reply means to the caller of ask(). fail_but_wrong_type: fail, but WRONGTYPE
  // (a fault of one key's value) is answered.
  enum class OnError { fail, answer, fail_but_wrong_type };
  // One command on the lookup connection (serialised). Returns nullopt, after fail(), when the
  // circuit is open, the server can't be reached or (OnError::fail) it answers an error; `error`
  // then says why. With OnError::answer an error reply is returned (a refused lease, say).
  std::optional<Reply> ask(const std::vector<std::string_view>& args, std::string& error,
                           OnError on_error = OnError::fail) noexcept;

  // Queues `item` for the upload thread (started on first use). A record is dropped when the
  // queue is full (k_max_queued items or k_max_queued_bytes) or the server is being closed; a
  // lease release is kept if it can be.
  void enqueue(UploadItem item) noexcept;
  // Keeps this node's lease `key` (value `token`) alive while it compiles: the upload thread sets
  // its expiry back to `ttl_ms` every third of it, while it still holds `token`, until its release
  // (queued by the Lease) is written. A holder that dies stops renewing; the lease then expires.
  void keep_alive(const std::string& key, const std::string& token, std::int64_t ttl_ms) noexcept;
  // Waits until the queue is empty (what was queued is written or given up). Never throws.
  void flush() noexcept;
  // Bytes of records this server accepted.
  std::uint64_t bytes_written() const noexcept { return m_bytes_written.load(); }
  // Bytes of records waiting in the queue (at most k_max_queued_bytes).
  std::size_t queued_bytes() const noexcept { return m_queued_bytes.load(); }

private:
  struct Renewal {
    std::string key;
    std::string token;
    std::int64_t ttl_ms;
    std::int64_t due_ms;  // the next renewal
  };
  void start_writer();  // with m_queue_mutex held
  void write_loop();
  void write_one(RedisClient& client, const UploadItem& item);
  // Renews the leases that are due, unlocking `lock` (on m_queue_mutex) for the commands.
  void renew_due(RedisClient& client, std::unique_lock<std::mutex>& lock);

  std::string m_name;
  std::atomic<std::int64_t> m_closed_until{0};  // the circuit breaker: no request before this time
  std::atomic<bool> m_warned{false};            // this outage was reported
  std::atomic<std::uint64_t> m_bytes_written{0};

  std::mutex m_read_mutex;
  RedisClient m_reader;  // the lookup connection (guarded by m_read_mutex); its url() is the server's

  std::mutex m_queue_mutex;
  util::ForkSafeCondition m_queue_changed;  // a fork()ed child leaves it alone (util/fork_safe.hpp)
  std::deque<UploadItem> m_queue;
  std::atomic<std::size_t> m_queued_bytes{0};  // of the records in m_queue (changed under m_queue_mutex)
  std::vector<Renewal> m_renewals;  // held leases, until their release is written
  bool m_busy = false;  // the upload thread is writing an item it took off the queue
  bool m_stopping = false;
  bool m_write_warned = false;
  std::thread m_writer;
  pid_t m_pid;  // a fork()ed child has no upload thread: it neither queues, waits nor joins
};

} // namespace kjit::remote
