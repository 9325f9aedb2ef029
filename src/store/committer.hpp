// A Store's writer thread: write transactions queued by callers, committed in order off their thread.
#pragma once

#include <kjit/error.hpp>

#include "util/fork_safe.hpp"

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <sys/types.h>
#include <unistd.h>

namespace kjit::store {

// While one lives, this thread holds something a queued commit may wait for (LMDB's write lock in
// a write transaction, the registry of stores): a quick_exit() from a signal handler that
// interrupts this thread gives up the drain of queued commits (as _exit() would) instead of
// waiting for ever on what the interrupted thread holds. Nests. Never throws.
class HoldsForCommits {
public:
  HoldsForCommits() noexcept;
  ~HoldsForCommits();
  HoldsForCommits(const HoldsForCommits&) = delete;
  HoldsForCommits& operator=(const HoldsForCommits&) = delete;
};

// Counts work begun and not yet ended, in the process that made it; wait() blocks until none is
// left (at once in a forked child, where nothing that began in the parent can end).
class Outstanding {
public:
  Outstanding() = default;
  ~Outstanding() { wait(); }
  Outstanding(const Outstanding&) = delete;
  Outstanding& operator=(const Outstanding&) = delete;

  void begin();
  void end() noexcept;
  void wait() const noexcept;

private:
  mutable std::mutex m_mutex;
  util::ForkSafeCondition m_idle;  // a fork()ed child leaves these alone (util/fork_safe.hpp)
  std::uint64_t m_count = 0;
  pid_t m_pid = ::getpid();
};

// Runs queued commits one at a time, in queue order, on its own thread (started at the first
// queue()). Process exit (exit(), a return from main, quick_exit()) and the destructor wait for
// every queued commit; _exit() and a kill lose the ones not yet run, as a kill during a commit would.
class Committer {
public:
  Committer();
  ~Committer();
  Committer(const Committer&) = delete;
  Committer& operator=(const Committer&) = delete;

  // Queues `commit` (one write transaction; it may throw StoreError) and returns at once; the
  // thread runs it, then `done` with nullptr or what it threw. In a forked child, or when no
  // thread can be started, both run here (before queue() returns).
  void queue(std::function<void()> commit, std::function<void(const StoreError*)> done);
  // Returns once every commit queued before the call has been run (their `done` may still be
  // running). At once on the committer's own thread and in a forked child.
  void settle() const noexcept;
  // Waits for every queued commit and its `done`.
  void drain() const noexcept;
  // Commits run on the thread so far (for tests and the bench).
  std::uint64_t committed() const noexcept;

private:
  struct Job {
    std::function<void()> commit;
    std::function<void(const StoreError*)> done;
  };
  void run();

  mutable std::mutex m_mutex;
  util::ForkSafeCondition m_wake;
  util::ForkSafeCondition m_settled;
  std::deque<Job> m_jobs;
  std::uint64_t m_queued = 0;
  std::uint64_t m_committed = 0;
  bool m_stop = false;
  std::unique_ptr<std::thread> m_thread;  // left alone in a forked child (it runs only in the parent)
  std::thread::id m_thread_id;
  pid_t m_pid = ::getpid();
  Outstanding m_outstanding;  // queued jobs whose `done` has not returned
  std::uint64_t m_registered = 0;  // its place in the list of live committers (drained at exit)
};

} // namespace kjit::store
