// Server: lookups on the caller's thread, uploads and lease releases on one thread, one warning per outage.
#include "remote/server.hpp"

#include "config/log.hpp"
#include "util/no_cancellation.hpp"
#include "util/own_thread.hpp"

#include <algorithm>
#include <chrono>
#include <unistd.h>
#include <tuple>
#include <utility>

namespace kjit::remote {

namespace {

// Deletes a lease only if it still holds this node's token (an expired lease may be another's now).
constexpr std::string_view k_release_script =
  "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0";
// Sets a lease's expiry back to ARGV[2] ms only if it still holds this node's token.
constexpr std::string_view k_renew_script =
  "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end return 0";

// A held lease is renewed every third of its expiry.
std::int64_t renew_period(std::int64_t ttl_ms)
{
  return std::max<std::int64_t>(ttl_ms / 3, 1);
}

std::chrono::steady_clock::time_point steady_at(std::int64_t ms)
{
  return std::chrono::steady_clock::time_point(std::chrono::milliseconds(ms));
}

} // namespace

bool is_wrong_type(const Reply& reply) noexcept
{
  return reply.kind == Reply::Kind::error && reply.text.rfind("WRONGTYPE", 0) == 0;
}

Server::Server(RedisUrl url) : m_name("remote " + url.display()), m_reader(std::move(url)), m_pid(::getpid()) {}

Server::~Server()
{
  const util::NoCancellation no_cancellation;  // pthread_join() is a cancellation point
  if (::getpid() != m_pid) {
    // The parent's thread, absent here: joining it would wait for ever, destroying it terminates.
    new std::thread(std::move(m_writer));  // NOLINT: left alone on purpose
    return;
  }
  {
    std::lock_guard lock(m_queue_mutex);
    m_stopping = true;
  }
  m_queue_changed->notify_all();
  if (m_writer.joinable()) {
    m_writer.join();
  }
}

bool Server::circuit_open() const noexcept
{
  return now_ms() < m_closed_until.load();
}

void Server::fail(const std::string& why) noexcept
{
  const util::NoCancellation no_cancellation;  // the warning's write()
  m_closed_until.store(now_ms() + k_breaker_ms);
  if (!m_warned.exchange(true)) {
    log::line("warning: " + m_name + ": " + why + "; lookups compile locally, the server is asked again in " +
              std::to_string(k_breaker_ms / 1000) + " s");
  }
}

std::optional<Reply> Server::ask(const std::vector<std::string_view>& args, std::string& error, OnError on_error) noexcept
{
  // A command is finished (within its timeout) before a cancellation of the asking thread acts.
  const util::NoCancellation no_cancellation;
  const auto not_asked = [&] {
    error = "not asked (the server failed less than " + std::to_string(k_breaker_ms / 1000) + " s ago)";
    return std::nullopt;
  };
  if (circuit_open()) {
    return not_asked();
  }
  try {
    std::lock_guard lock(m_read_mutex);
    if (circuit_open()) {
      // Opened by the request this one queued behind: each waiting thread would pay a timeout too.
      return not_asked();
    }
    Reply reply = m_reader.command(args);
    if (reply.kind == Reply::Kind::error &&
        (on_error == OnError::fail || (on_error == OnError::fail_but_wrong_type && !is_wrong_type(reply)))) {
      error = reply.text;
      fail("the server refused " + std::string(args.front()) + ": " + reply.text);
      return std::nullopt;
    }
    m_warned.store(false);  // answered: a later outage is reported again
    return reply;
  } catch (const std::exception& e) {
    error = e.what();
    fail(e.what());
    return std::nullopt;
  }
}

void Server::enqueue(UploadItem item) noexcept
{
  try {
    {
      std::lock_guard lock(m_queue_mutex);
      if (m_stopping || ::getpid() != m_pid) {
        return;
      }
      const std::size_t size = item.record ? item.record->size() : 0;
      if (m_queue.size() >= k_max_queued || (size > 0 && m_queued_bytes + size > k_max_queued_bytes)) {
        if (item.lease_name.empty()) {
          return;
        }
        item.record.reset();  // the record stays local; the lease is still released
      }
      start_writer();
      const std::size_t bytes = item.record ? item.record->size() : 0;
      m_queue.push_back(std::move(item));
      m_queued_bytes += bytes;
    }
    m_queue_changed->notify_all();
  } catch (const std::exception&) {
    // No thread or no memory: the record stays local, the lease expires by itself.
  }
}

void Server::start_writer()
{
  if (!m_writer.joinable()) {
    m_writer = util::own_thread("kjit-remote", [this] { write_loop(); });
  }
}

void Server::keep_alive(const std::string& key, const std::string& token, std::int64_t ttl_ms) noexcept
{
  try {
    {
      std::lock_guard lock(m_queue_mutex);
      if (m_stopping || ::getpid() != m_pid) {
        return;
      }
      start_writer();
      m_renewals.push_back({key, token, ttl_ms, now_ms() + renew_period(ttl_ms)});
    }
    m_queue_changed->notify_all();
  } catch (const std::exception&) {
    // No thread or no memory: the lease expires after its ttl, as before renewals
  }
}

void Server::flush() noexcept
{
  const util::NoCancellation no_cancellation;  // the wait
  if (::getpid() != m_pid) {
    return;
  }
  std::unique_lock lock(m_queue_mutex);
  m_queue_changed->wait(lock, [this] { return !m_writer.joinable() || (m_queue.empty() && !m_busy); });
}

void Server::write_one(RedisClient& client, const UploadItem& item)
{
  if (item.record) {
    // Overwrites: a value there is either as good (same key, same inputs) or damaged.
    const Reply reply = client.command({"SET", item.record_name, *item.record});
    if (reply.kind == Reply::Kind::error) {
      std::lock_guard warn_lock(m_queue_mutex);
      if (!std::exchange(m_write_warned, true)) {
        log::line("warning: " + m_name + " refused an upload: " + reply.text + " (kernels are still cached locally)");
      }
    } else {
      m_bytes_written += item.record->size();
    }
  }
  if (!item.lease_name.empty()) {
    // An error reply (no EVAL permission) leaves the lease to expire by itself.
    std::ignore = client.command({"EVAL", k_release_script, "1", item.lease_name, item.token});
  }
}

void Server::renew_due(RedisClient& client, std::unique_lock<std::mutex>& lock)
{
  const std::int64_t now = now_ms();
  std::vector<Renewal> due;
  for (Renewal& renewal : m_renewals) {
    if (renewal.due_ms <= now) {
      renewal.due_ms = now + renew_period(renewal.ttl_ms);
      due.push_back(renewal);
    }
  }
  if (due.empty() || circuit_open()) {
    return;
  }
  lock.unlock();
  std::vector<std::string> lost;  // expired, taken by another node, or no EVAL/PEXPIRE permission
  for (const Renewal& renewal : due) {
    try {
      const Reply reply = client.command({"EVAL", k_renew_script, "1", renewal.key, renewal.token, std::to_string(renewal.ttl_ms)});
      if (reply.kind != Reply::Kind::integer || reply.integer != 1) {
        lost.push_back(renewal.token);
      }
    } catch (const RedisFailure& e) {
      fail(e.what());
      break;
    }
  }
  lock.lock();
  for (const std::string& token : lost) {
    std::erase_if(m_renewals, [&](const Renewal& renewal) { return renewal.token == token; });
  }
}

void Server::write_loop()
{
  RedisClient client(url());
  std::unique_lock lock(m_queue_mutex);
  for (;;) {
    const auto ready = [this] { return m_stopping || !m_queue.empty(); };
    if (m_renewals.empty()) {
      m_queue_changed->wait(lock, ready);
    } else {
      const auto next = std::min_element(m_renewals.begin(), m_renewals.end(),
                                         [](const Renewal& a, const Renewal& b) { return a.due_ms < b.due_ms; });
      m_queue_changed->wait_until(lock, steady_at(next->due_ms), ready);
    }
    renew_due(client, lock);
    if (m_queue.empty()) {
      if (m_stopping) {
        return;
      }
      continue;
    }
    const UploadItem item = std::move(m_queue.front());
    m_queue.pop_front();
    m_queued_bytes -= item.record ? item.record->size() : 0;
    m_busy = true;
    lock.unlock();
    if (!circuit_open()) {
      try {
        write_one(client, item);
      } catch (const RedisFailure& e) {
        fail(e.what());
      }
    }
    lock.lock();
    if (!item.lease_name.empty()) {
      std::erase_if(m_renewals, [&](const Renewal& renewal) { return renewal.token == item.token; });
    }
    m_busy = false;
    m_queue_changed->notify_all();
  }
}

} // namespace kjit::remote
