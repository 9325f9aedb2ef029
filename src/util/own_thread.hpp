// kjit's own background threads: named, and started with every signal blocked.
#pragma once

#include <csignal>
#include <pthread.h>
#include <thread>
#include <utility>

namespace kjit::util {

// A thread of kjit's own (the store's committer, the mirror's writer, the remote tier's writer and
// name lookups), started with every signal blocked and named `name` (at most 15 bytes, shown by
// `top -H`, gdb and /proc/PID/task/TID/comm): the host's process-directed signals (SIGINT,
// SIGTERM, SIGCHLD, a profiler's SIGPROF) go to the host's own threads, its handlers never run on
// a thread it did not make, and kjit's writes and fdatasync there are never interrupted. Throws
// std::system_error when no thread can be started (as std::thread).
template <typename Function>
std::thread own_thread(const char* name, Function&& function)
{
  sigset_t all;
  sigset_t old;
  sigfillset(&all);
  const bool masked = ::pthread_sigmask(SIG_SETMASK, &all, &old) == 0;
  struct Restore {
    bool masked;
    sigset_t& old;
    ~Restore()
    {
      if (masked) {
        ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
      }
    }
  } restore{masked, old};
  std::thread thread(std::forward<Function>(function));
  ::pthread_setname_np(thread.native_handle(), name);
  return thread;
}

} // namespace kjit::util
