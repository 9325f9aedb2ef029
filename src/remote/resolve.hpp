// A server's host name resolved within a deadline.
#pragma once

#include <cstdint>
#include <memory>
#include <netdb.h>
#include <string>

namespace kjit::remote {

using Addresses = std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)>;

// The TCP addresses of `host`:`port`, found by `deadline_ms` (steady clock, now_ms()). A numeric
// address is read at once. A name is resolved by glibc's asynchronous getaddrinfo_a(), waited for
// until the deadline: getaddrinfo() has no timeout of its own, and a resolver that gets no answer
// waits its resolv.conf `timeout` × `attempts` (10 s by default) in every process. A request
// still running at the deadline is left to glibc's thread (its few hundred bytes are not freed:
// that thread writes into them when it ends; the remote tier's breaker asks again after 30 s at
// the earliest). Throws RedisFailure naming the host.
Addresses resolve(const std::string& host, int port, std::int64_t deadline_ms);

} // namespace kjit::remote
