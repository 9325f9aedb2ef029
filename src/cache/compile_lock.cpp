// Byte-range OFD locks on <store>/compile.lock, polled up to a bound, dropped by forked children.
#include "cache/compile_lock.hpp"

#include "util/file.hpp"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fcntl.h>
#include <mutex>
#include <pthread.h>
#include <set>
#include <thread>
#include <tuple>
#include <unistd.h>

namespace kjit::cache {

namespace {

constexpr off_t k_lock_slots = off_t(1) << 20;

// Descriptors of held locks: a fork()ed child closes its copies (never unlocking: the lock is
// shared with the parent's description until the parent releases it).
std::mutex g_held_mutex;
std::set<int> g_held;

void close_in_child()
{
  for (const int fd : g_held) {
    ::close(fd);
  }
  g_held.clear();
}

void register_fork_handler()
{
  static std::once_flag once;
  std::call_once(once, [] {
    ::pthread_atfork([] { g_held_mutex.lock(); }, [] { g_held_mutex.unlock(); },
                     [] {
                       close_in_child();
                       g_held_mutex.unlock();
                     });
  });
}

bool set_lock(int fd, off_t slot, short type)
{
  struct flock lock {};
  lock.l_type = type;
  lock.l_whence = SEEK_SET;
  lock.l_start = slot;
  lock.l_len = 1;
  int rc;
  while ((rc = ::fcntl(fd, F_OFD_SETLK, &lock)) != 0 && errno == EINTR) {
  }
  return rc == 0;
}

} // namespace

CompileLock::CompileLock(const std::string& store_dir, const util::Sha256& key, double timeout_s)
{
  register_fork_handler();
  // In a shared cache's store folder the group's too: every member takes locks in it.
  const int mode = util::mode_in(store_dir, 0600, false);
  const int fd = ::open((store_dir + "/compile.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, mode);
  if (fd < 0) {
    return;  // no lock: at worst two processes compile the same key
  }
  util::set_group_mode(fd, mode);
  std::uint64_t slot;
  std::memcpy(&slot, key.data(), sizeof slot);
  m_slot = static_cast<off_t>(slot % k_lock_slots);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  auto nap = std::chrono::microseconds(500);
  for (;;) {
    if (set_lock(fd, m_slot, F_WRLCK)) {
      break;
    }
    if (errno != EAGAIN && errno != EACCES) {
      ::close(fd);
      return;
    }
    m_waited = true;
    if (std::chrono::steady_clock::now() >= deadline) {
      ::close(fd);
      m_timed_out = true;
      return;
    }
    std::this_thread::sleep_for(nap);
    nap = std::min(nap * 2, std::chrono::microseconds(20000));
  }
  std::lock_guard lock(g_held_mutex);
  m_fd = fd;
  m_pid = ::getpid();
  g_held.insert(fd);
}

CompileLock::~CompileLock()
{
  if (m_fd < 0 || m_pid != ::getpid()) {
    return;  // nothing held, or a forked child whose copy was closed at fork
  }
  std::lock_guard lock(g_held_mutex);
  std::ignore = set_lock(m_fd, m_slot, F_UNLCK);  // released now, even if a child still has the fd
  g_held.erase(m_fd);
  ::close(m_fd);
}

} // namespace kjit::cache
