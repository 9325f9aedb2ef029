// Host names resolved within a deadline (see resolve.hpp).
#include "remote/resolve.hpp"

#include "remote/redis.hpp"
#include "util/no_cancellation.hpp"

#include <ctime>
#include <sys/socket.h>

namespace kjit::remote {

namespace {

// One getaddrinfo_a() request: glibc's thread reads the name and writes the result through it.
struct Request {
  std::string host;
  std::string service;
  addrinfo hints{};
  gaicb block{};
};

addrinfo tcp_hints(int flags)
{
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = flags;
  return hints;
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
  auto request = std::make_unique<Request>();
  request->host = host;
  request->service = service;
  request->hints = tcp_hints(AI_NUMERICSERV);
  request->block.ar_name = request->host.c_str();
  request->block.ar_service = request->service.c_str();
  request->block.ar_request = &request->hints;
  gaicb* list[] = {&request->block};
  // A cancellation in gai_suspend() would free the request under glibc's thread: the wait is
  // bounded by the deadline, and the caller's next cancellation point acts on it.
  const util::NoCancellation no_cancellation;
  if (const int started = ::getaddrinfo_a(GAI_NOWAIT, list, 1, nullptr); started != 0) {
    throw RedisFailure("cannot resolve " + host + ": " + ::gai_strerror(started));
  }
  int status = EAI_INPROGRESS;
  for (std::int64_t left;
       (status = ::gai_error(&request->block)) == EAI_INPROGRESS && (left = deadline_ms - now_ms()) > 0;) {
    const timespec wait{static_cast<std::time_t>(left / 1000), static_cast<long>(left % 1000) * 1000000L};
    std::ignore = ::gai_suspend(list, 1, &wait);  // returns early for a signal: the loop waits again
  }
  if (status == EAI_INPROGRESS) {
    std::ignore = ::gai_cancel(&request->block);
    status = ::gai_error(&request->block);
    if (status == EAI_INPROGRESS) {
      std::ignore = request.release();  // glibc's thread still writes into it
    }
    if (status == EAI_INPROGRESS || status == EAI_CANCELED) {
      throw RedisFailure("cannot resolve " + host + " within the " + std::to_string(k_connect_timeout_ms) +
                         " ms connect timeout");
    }
  }
  if (status != 0) {
    throw RedisFailure("cannot resolve " + host + ": " + ::gai_strerror(status));
  }
  return {request->block.ar_result, ::freeaddrinfo};
}

} // namespace kjit::remote
