// Host names resolved within a deadline (see resolve.hpp).
#include "remote/resolve.hpp"

#include "remote/redis.hpp"
#include "util/no_cancellation.hpp"
#include "util/own_thread.hpp"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <sys/socket.h>
#include <system_error>
#include <thread>
#include <tuple>

namespace kjit::remote {

namespace {

// One lookup, shared by the caller and the thread that runs getaddrinfo(): whichever lets go last
// frees it (the thread, when the caller gave up at its deadline).
struct Lookup {
  std::string host;
  std::string service;
  addrinfo hints{};
  std::mutex mutex;
  std::condition_variable finished;
  bool done = false;
  int status = EAI_SYSTEM;
  addrinfo* result = nullptr;  // owned here until the caller takes it

  ~Lookup()
  {
    if (result != nullptr) {
      ::freeaddrinfo(result);
    }
  }
};

addrinfo tcp_hints(int flags)
{
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = flags;
  return hints;
}

// Starts `lookup` on a thread of its own (util::own_thread: every signal but a fault's blocked
// there, as the application's handlers expect of a library's threads). False when no thread can
// be started now.
bool start(const std::shared_ptr<Lookup>& lookup)
{
  try {
    util::own_thread("kjit-resolve", [lookup] {
      addrinfo* found = nullptr;
      const int status = ::getaddrinfo(lookup->host.c_str(), lookup->service.c_str(), &lookup->hints, &found);
      const std::lock_guard lock(lookup->mutex);
      lookup->status = status;
      lookup->result = status == 0 ? found : nullptr;
      lookup->done = true;
      lookup->finished.notify_all();
    }).detach();
  } catch (const std::system_error&) {
    return false;
  }
  return true;
}

} // namespace

Addresses resolve(const std::string& host, int port, std::int64_t deadline_ms)
{
  const std::string service = std::to_string(port);
  addrinfo* found = nullptr;
  const addrinfo numeric = tcp_hints(AI_NUMERICHOST | AI_NUMERICSERV);
  if (::getaddrinfo(host.c_str(), service.c_str(), &numeric, &found) == 0) {
    return {found, ::freeaddrinfo};
  }
  auto lookup = std::make_shared<Lookup>();
  lookup->host = host;
  lookup->service = service;
  lookup->hints = tcp_hints(AI_NUMERICSERV);
  if (!start(lookup)) {
    throw RedisFailure("cannot resolve " + host + ": no thread can be started to resolve it");
  }
  // The wait is bounded by the deadline; a cancellation acts at the caller's next cancellation point.
  const util::NoCancellation no_cancellation;
  std::unique_lock lock(lookup->mutex);
  for (std::int64_t left; !lookup->done && (left = deadline_ms - now_ms()) > 0;) {
    std::ignore = lookup->finished.wait_for(lock, std::chrono::milliseconds(left));
  }
  if (!lookup->done) {
    throw RedisFailure("cannot resolve " + host + " within the " + std::to_string(k_connect_timeout_ms) +
                       " ms connect timeout");
  }
  if (lookup->status != 0) {
    throw RedisFailure("cannot resolve " + host + ": " + ::gai_strerror(lookup->status));
  }
  found = lookup->result;
  lookup->result = nullptr;
  return {found, ::freeaddrinfo};
}

} // namespace kjit::remote
