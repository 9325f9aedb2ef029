// Descriptors 0–2 made valid at start (see standard_fds.hpp).
#include "standard_fds.hpp"

#include <cerrno>
#include <fcntl.h>
#include <tuple>
#include <unistd.h>

namespace kjit::cli {

void open_standard_fds() noexcept
{
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF) {
      continue;
    }
    // open() takes the lowest free number: this one, the lower ones being open by now (no
    // other thread runs yet). Without /dev/full, stdout gets /dev/null.
    if (fd != 1 || ::open("/dev/full", O_WRONLY) < 0) {
      std::ignore = ::open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
    }
  }
}

} // namespace kjit::cli
