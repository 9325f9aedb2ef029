// A server's host name resolved within a deadline.
#pragma once

#include <cstdint>
#include <memory>
#include <netdb.h>
#include <string>

namespace kjit::remote {

using Addresses = std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)>;

// The TCP addresses of `host`:`port`, found by `deadline_ms` (steady clock, now_ms()). A numeric
// address is read at once. A name is resolved by getaddrinfo() on a thread of its own (every
// signal blocked there), waited for until the deadline: getaddrinfo() has no timeout of its own,
// and a resolver that gets no answer waits its resolv.conf `timeout` × `attempts` (10 s by
// default) in every process. A lookup still running at the deadline is left to its thread, which
// frees it when getaddrinfo() returns (the remote tier's breaker asks again after 30 s at the
// earliest). Not glibc's getaddrinfo_a(): its helper threads' count survives fork(), so a child
// forked while one idled (for a second after each answer) queued its requests for a thread that
// it never started, and resolved no name at all. Throws RedisFailure naming the host (a process
// that cannot start a thread now included).
Addresses resolve(const std::string& host, int port, std::int64_t deadline_ms);

} // namespace kjit::remote
