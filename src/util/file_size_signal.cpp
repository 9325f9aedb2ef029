// SIGXFSZ blocked around kjit's writes, and taken back if they raised it.
#include "util/file_size_signal.hpp"

#include <ctime>
#include <pthread.h>
#include <sys/resource.h>

namespace kjit::util {

namespace {

sigset_t only_xfsz()
{
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGXFSZ);
  return set;
}

} // namespace

FileSizeSignalBlock::FileSizeSignalBlock() noexcept
{
  const sigset_t xfsz = only_xfsz();
  m_blocked = ::pthread_sigmask(SIG_BLOCK, &xfsz, &m_old) == 0 && sigismember(&m_old, SIGXFSZ) == 0;
}

FileSizeSignalBlock::~FileSizeSignalBlock()
{
  if (!m_blocked) {
    return;
  }
  // The kernel raises SIGXFSZ for the thread that wrote: pending here, and only ours to take.
  sigset_t pending;
  if (::sigpending(&pending) == 0 && sigismember(&pending, SIGXFSZ) == 1) {
    const sigset_t xfsz = only_xfsz();
    const timespec now{0, 0};
    ::sigtimedwait(&xfsz, nullptr, &now);
  }
  ::pthread_sigmask(SIG_SETMASK, &m_old, nullptr);
}

bool near_file_size_limit(unsigned long long size, unsigned long long margin)
{
  struct rlimit limit {};
  return ::getrlimit(RLIMIT_FSIZE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY && size + margin >= limit.rlim_cur;
}

} // namespace kjit::util
