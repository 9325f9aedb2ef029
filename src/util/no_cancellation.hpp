// pthread_cancel() held off for a while: across code that must not be left half done.
#pragma once

#include <pthread.h>

namespace kjit::util {

// While it lives, a pthread_cancel() of this thread waits: the cancellation is acted on at the
// first cancellation point after it (the caller's). A cancellation unwinding through a noexcept
// function (a tier's lookup that waits in poll()) ends the process with std::terminate, and one in
// the middle of a request leaves its answer unread on a connection the next request uses.
// Nested uses restore what they found. Never throws.
class NoCancellation {
public:
  NoCancellation() noexcept { ::pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &m_old); }
  ~NoCancellation() { ::pthread_setcancelstate(m_old, nullptr); }
  NoCancellation(const NoCancellation&) = delete;
  NoCancellation& operator=(const NoCancellation&) = delete;

private:
  int m_old = PTHREAD_CANCEL_ENABLE;
};

} // namespace kjit::util
