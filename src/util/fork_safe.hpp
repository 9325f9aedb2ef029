// A condition variable that a fork()ed child leaves alone.
#pragma once

#include <condition_variable>
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

} // namespace kjit::util
