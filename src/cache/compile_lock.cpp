// Byte-range OFD locks on <store>/compile.lock.
#include "cache/compile_lock.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>

namespace kjit::cache {

namespace {
constexpr off_t k_lock_slots = off_t(1) << 20;
}

CompileLock::CompileLock(const std::string& store_dir, const util::Sha256& key)
{
  util::UniqueFd fd(::open((store_dir + "/compile.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd) {
    return;  // no lock: at worst two processes compile the same key
  }
  std::uint64_t slot;
  std::memcpy(&slot, key.data(), sizeof slot);
  struct flock lock {};
  lock.l_type = F_WRLCK;
  lock.l_whence = SEEK_SET;
  lock.l_start = static_cast<off_t>(slot % k_lock_slots);
  lock.l_len = 1;
  int rc;
  while ((rc = ::fcntl(fd.get(), F_OFD_SETLKW, &lock)) != 0 && errno == EINTR) {
  }
  if (rc == 0) {
    m_fd = std::move(fd);
  }
}

} // namespace kjit::cache
