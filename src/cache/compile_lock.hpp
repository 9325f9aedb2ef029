// Cross-process single flight: one process compiles a key while the others wait for its result.
#pragma once

#include "util/hash.hpp"

#include <string>
#include <sys/types.h>

namespace kjit::cache {

// An open-file-description lock (F_OFD_SETLK) on one byte of <store>/compile.lock chosen by the
// key. OFD locks belong to this object, not to the process, so threads and processes exclude
// each other alike, and the lock goes away with the holder (even after kill -9).
// Two keys that share the byte only wait for each other needlessly.
// The wait is bounded: a holder that is stopped (SIGSTOP) or wedged delays others by at most
// `timeout_s`, after which they compile anyway (the store keeps one result). The lock is released
// explicitly (F_UNLCK) before its descriptor is closed, and a fork()ed child closes its copy of the
// descriptor at once, so a child that outlives the compile never holds the lock.
class CompileLock {
public:
  CompileLock() = default;  // holds nothing
  CompileLock(const std::string& store_dir, const util::Sha256& key, double timeout_s);
  ~CompileLock();
  CompileLock(const CompileLock&) = delete;
  CompileLock& operator=(const CompileLock&) = delete;

  bool held() const noexcept { return m_fd >= 0; }
  // Another process held the lock when we asked (so it may have stored the result meanwhile).
  bool waited() const noexcept { return m_waited; }
  // The wait ended at the bound without the lock.
  bool timed_out() const noexcept { return m_timed_out; }

private:
  int m_fd = -1;
  off_t m_slot = 0;
  pid_t m_pid = 0;
  bool m_waited = false;
  bool m_timed_out = false;
};

} // namespace kjit::cache
