// Compile leases: SET NX PX to take one, GET polls while another node holds it, released after the upload.
#include "remote/lease.hpp"

#include "remote/server.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <random>
#include <thread>
#include <unistd.h>
#include <utility>

namespace kjit::remote {

namespace {

// Unique per lookup in the fleet, and says who holds it (`redis-cli get` on a lease).
std::string new_token()
{
  static std::atomic<std::uint64_t> counter{0};
  static const std::uint64_t salt = std::random_device{}() ^ (std::uint64_t{std::random_device{}()} << 32);
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) {
    host[0] = '\0';
  }
  return std::string(host) + " pid " + std::to_string(::getpid()) + " " + std::to_string(salt) + "." +
         std::to_string(++counter);
}

// GET `record_name`: its value, nil for a value of another type, or nullopt (the server failed).
std::optional<Reply> record(Server& server, const std::string& record_name, std::string& error)
{
  std::optional<Reply> reply = server.ask({"GET", record_name}, error, Server::OnError::fail_but_wrong_type);
  return reply && is_wrong_type(*reply) ? Reply{} : reply;
}

// Whether the lease `lease_name` another holds has no expiry: kjit takes every lease with one, so
// such a value was planted (or PERSISTed) and would hold every node off this key for good, each
// lookup waiting the whole bound. (An error reply, PTTL not allowed: not known, so no.)
bool held_for_good(Server& server, const std::string& lease_name)
{
  std::string error;
  const std::optional<Reply> reply = server.ask({"PTTL", lease_name}, error, Server::OnError::answer);
  return reply && reply->kind == Reply::Kind::integer && reply->integer == -1;
}

} // namespace

Lease::Lease(Server* server, std::string key, std::string token) noexcept
  : m_server(server), m_key(std::move(key)), m_token(std::move(token))
{
}

Lease::~Lease()
{
  release();
}

Lease::Lease(Lease&& other) noexcept
  : m_server(std::exchange(other.m_server, nullptr)), m_key(std::move(other.m_key)), m_token(std::move(other.m_token))
{
}

Lease& Lease::operator=(Lease&& other) noexcept
{
  if (this != &other) {
    release();
    m_server = std::exchange(other.m_server, nullptr);
    m_key = std::move(other.m_key);
    m_token = std::move(other.m_token);
  }
  return *this;
}

void Lease::release() noexcept
{
  if (Server* server = std::exchange(m_server, nullptr)) {
    server->enqueue({std::string(), std::nullopt, m_key, m_token});
  }
}

LeaseAnswer acquire_lease(Server& server, const std::string& record_name, const std::string& lease_name,
                          std::int64_t wait_ms)
{
  LeaseAnswer answer;
  try {
    const std::string token = new_token();
    const std::int64_t ttl_ms = std::max<std::int64_t>(wait_ms, 1);
    const std::string ttl = std::to_string(ttl_ms);
    const std::int64_t deadline = now_ms() + wait_ms;
    std::int64_t nap_ms = 10;
    std::string error;
    for (;;) {
      // The record first: the holder uploads it before releasing the lease. A value of another
      // type there is no record (this node compiles, its upload replaces it), not a server fault.
      std::optional<Reply> reply = record(server, record_name, error);
      if (!reply) {
        return answer;
      }
      if (reply->kind == Reply::Kind::string) {
        answer.kind = LeaseAnswer::Kind::record;
        answer.bytes = std::move(reply->text);
        return answer;
      }
      if (server.url().readonly) {
        // GET (a read-only ACL user may run little else); nobody compiling it: compile here. A
        // value of another type is a held lease, as SET NX finds it; one without an expiry (PTTL,
        // a read) is not waited for, as by the other nodes.
        reply = server.ask({"GET", lease_name}, error, Server::OnError::fail_but_wrong_type);
        if (!reply || (reply->kind != Reply::Kind::string && !is_wrong_type(*reply)) || held_for_good(server, lease_name)) {
          return answer;
        }
      } else {
        // A refused lease (a full server, an ACL without SET) only means no single flight: the
        // upload, refused the same way, says so. Lookups go on.
        reply = server.ask({"SET", lease_name, token, "NX", "PX", ttl}, error, Server::OnError::answer);
        // Only nil says another node holds it; anything but OK and nil (an error, or an answer no
        // Redis gives) is no lease: waiting for it would cost every compile the whole bound.
        const bool taken = reply && reply->kind == Reply::Kind::status && reply->text == "OK";
        if (!reply || (!taken && reply->kind != Reply::Kind::nil)) {
          return answer;
        }
        if (!taken && held_for_good(server, lease_name)) {
          return answer;
        }
        if (taken) {
          // Taken. The holder may have uploaded and released between our GET and SET.
          Lease lease(&server, lease_name, token);
          reply = record(server, record_name, error);
          if (reply && reply->kind == Reply::Kind::string) {
            answer.kind = LeaseAnswer::Kind::record;
            answer.bytes = std::move(reply->text);
            return answer;  // the lease is released on the way out
          }
          server.keep_alive(lease_name, token, ttl_ms);  // while it compiles
          answer.kind = LeaseAnswer::Kind::held;
          answer.lease = std::move(lease);
          return answer;
        }
      }
      if (now_ms() >= deadline) {
        answer.timed_out = true;
        return answer;
      }
      // A pthread_cancel() of this thread acts here (each command holds it off till its answer).
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min(nap_ms, deadline - now_ms() + 1)));
      nap_ms = std::min<std::int64_t>(nap_ms * 2, 100);
    }
  } catch (const std::exception&) {
    return answer;  // no memory: compile without a lease
  }
}

} // namespace kjit::remote
