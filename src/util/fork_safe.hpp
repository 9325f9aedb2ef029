// A condition variable that a fork()ed child leaves alone, and process-wide state made afresh in one.
#pragma once

#include <atomic>
#include <condition_variable>
#include <pthread.h>
#include <unistd.h>

namespace kjit::util {

// A thread of the parent waiting on a condition variable at fork() stays counted as a waiter in
// the child's copy, where no thread will ever leave it: glibc's pthread_cond_destroy then waits for
// ever. This one is destroyed only in the process that made it; a child's copy is leaked.
class ForkSafeCondition {
public:
  ForkSafeCondition() = default;
  ForkSafeCondition(const ForkSafeCondition&) = delete;
  ForkSafeCondition& operator=(const ForkSafeCondition&) = delete;
  ~ForkSafeCondition()
  {
    if (::getpid() == m_pid) {
      delete m_condition;
    }
  }

  std::condition_variable* operator->() const noexcept { return m_condition; }
  std::condition_variable& operator*() const noexcept { return *m_condition; }

private:
  std::condition_variable* m_condition = new std::condition_variable;  // NOLINT: leaked in a child
  pid_t m_pid = ::getpid();
};

// A process-wide T (a registry and its mutex), never destroyed, made afresh in a fork()ed child: the
// parent's copy may have been locked or changed by another of its threads at fork(). Nothing is
// locked at fork() itself (a prepare handler waiting for a mutex can deadlock with exit()'s
// handlers), and no function-static guard is involved, which a fork() during its initialization
// would leave "in progress" in the child. One object per T, at namespace scope: it is made when
// the library is loaded.
template <class T>
class ForkFresh {
public:
  ForkFresh()
  {
    s_current.store(new T);                                                   // NOLINT: never destroyed
    ::pthread_atfork(nullptr, nullptr, [] { s_current.store(new T); });       // NOLINT: the copy leaks
  }
  ForkFresh(const ForkFresh&) = delete;
  ForkFresh& operator=(const ForkFresh&) = delete;

  T& operator*() const noexcept { return *s_current.load(std::memory_order_acquire); }
  T* operator->() const noexcept { return s_current.load(std::memory_order_acquire); }

private:
  static inline std::atomic<T*> s_current{nullptr};
};

} // namespace kjit::util
