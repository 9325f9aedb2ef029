// kjit's own background threads: named, started with every signal but a fault's blocked, and run
// behind their creator.
#pragma once

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <pthread.h>
#include <sys/resource.h>
#include <thread>
#include <utility>

namespace kjit::util {

// How far below its creator a thread of kjit's own runs (nice(2) steps; Linux's are per thread).
// A miss compiled ahead has NVRTC on the caller's thread while kjit's own make its key, encode its
// headers and write the mirror: on two cores three runnable threads had NVRTC wait 19–32 ms of a
// vendored CCCL's 1.1 s compile in the run queue (its /proc/thread-self/schedstat), 8 ms with
// these 5 steps below it (19 steps gave no less). Their work is what NVRTC's time hides.
constexpr int k_steps_behind_caller = 5;

// Whether the calling thread is one of kjit's own (own_thread()).
inline thread_local bool t_own_thread = false;

// Lowers the calling thread's priority k_steps_behind_caller steps (to 19 at most), where the
// system allows: raising one's own nice value always is.
inline void run_behind_caller() noexcept
{
  const int saved = errno;
  errno = 0;
  const int nice = ::getpriority(PRIO_PROCESS, 0);  // this thread's (0: the calling thread on Linux)
  if (errno == 0 && nice < 19) {
    ::setpriority(PRIO_PROCESS, 0, std::min(19, nice + k_steps_behind_caller));
  }
  errno = saved;
}

// A thread of kjit's own (the store's committer, the mirror's writer, the thread that makes a
// miss's key beside NVRTC, the remote tier's writer and name lookups), started with every signal
// but a fault's blocked, named `name` (at most 15 bytes, shown by `top -H`, gdb and
// /proc/PID/task/TID/comm) and run behind its creator (run_behind_caller(); a creator of kjit's
// own is behind already):
// the host's process-directed signals (SIGINT, SIGTERM, SIGCHLD, a profiler's SIGPROF) go to the
// host's own threads, its handlers never run on a thread it did not make, and kjit's writes and
// fdatasync there are never interrupted. Throws std::system_error when no thread can be started
// (as std::thread).
template <typename Function>
std::thread own_thread(const char* name, Function&& function)
{
  sigset_t all;
  sigset_t old;
  sigfillset(&all);
  // A fault's signal is the faulting thread's: blocked, the kernel ends the process without the
  // host's handler (a crash reporter, Python's faulthandler) for a fault of kjit's own.
  for (const int fault : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS}) {
    sigdelset(&all, fault);
  }
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
  // A thread started by one of kjit's own (the mirror's writer by kjit-prepare, which mirrors a
  // miss's headers early) takes that thread's value with it: 5 steps behind the host's, not 10.
  std::thread thread([function = std::forward<Function>(function), behind = !t_own_thread]() mutable {
    t_own_thread = true;
    if (behind) {
      run_behind_caller();
    }
    function();
  });
  ::pthread_setname_np(thread.native_handle(), name);
  return thread;
}

} // namespace kjit::util
