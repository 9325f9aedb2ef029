// See shared_headers.hpp.
#include "mirror/shared_headers.hpp"

#include "util/file.hpp"

#include <cerrno>
#include <ctime>
#include <fcntl.h>
#include <sys/stat.h>
#include <tuple>
#include <unistd.h>

namespace kjit::mirror {

namespace {

using util::UniqueFd;

// The nanoseconds of the modification time a shared header gets when it is written: its
// content's SHA-256 (`hex`) names them, so that a file whose time still says so holds what it was
// written with (an edit in place, a vim on a hard-linked file, gives it the time of the edit).
long written_nanoseconds(const std::string& hex)
{
  unsigned long value = 0;
  for (std::size_t i = 0; i < 8 && i < hex.size(); ++i) {
    const char c = hex[i];
    value = value * 16 + static_cast<unsigned long>(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
  }
  return static_cast<long>(value % 1000000000UL);
}

// Gives the shared header open as `fd` the time holds() knows it by (the second now; a
// filesystem without nanoseconds drops them).
void mark_written(int fd, const std::string& hex)
{
  timespec times[2]{};
  times[0].tv_nsec = UTIME_OMIT;
  times[1].tv_sec = std::time(nullptr);
  times[1].tv_nsec = written_nanoseconds(hex);
  std::ignore = ::futimens(fd, times);
}

// Whether programs/headers/<hex> (in `shared`) is a regular file holding `content`.
bool holds(int shared, const std::string& hex, const std::string& content)
{
  // One stat where the file is as it was written (its size, and the time written_nanoseconds()
  // gave it): a vendored CCCL's edit read back 1 691 files, 20 MB, beside NVRTC on every miss. A
  // filesystem whose times have no nanoseconds (or a file an edit touched) is read and compared.
  const auto holds_its_size = [&](const struct stat& st) {
    return S_ISREG(st.st_mode) && static_cast<std::size_t>(st.st_size) == content.size();
  };
  struct stat at {};
  if (::fstatat(shared, hex.c_str(), &at, AT_SYMLINK_NOFOLLOW) != 0 || !holds_its_size(at)) {
    return false;
  }
  if (at.st_mtim.tv_nsec == written_nanoseconds(hex)) {
    return true;
  }
  // O_NONBLOCK: a FIFO there (damage) must not wait for a writer; not being a regular file, it is
  // replaced by the caller.
  UniqueFd existing(::openat(shared, hex.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  struct stat st {};
  if (!existing || ::fstat(existing.get(), &st) != 0 || !holds_its_size(st)) {
    return false;  // (replaced since the look)
  }
  std::string present(content.size(), '\0');
  if ((content.empty() || ::pread(existing.get(), present.data(), present.size(), 0) == st.st_size) && present == content) {
    mark_written(existing.get(), hex);  // (one a kjit before these times wrote: one stat from now on)
    return true;
  }
  return false;
}

// Writes programs/headers/<hex> (in `shared`): `content`, whose SHA-256 is `hex`.
std::error_code write_shared_header(int shared, const std::string& hex, const std::string& content)
{
  if (auto e = util::write_file_atomic(shared, hex, content, util::mode_in(shared, 0644, false), util::Durability::none)) {
    return e;
  }
  if (UniqueFd written(::openat(shared, hex.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)); written) {
    mark_written(written.get(), hex);
  }
  return {};
}

} // namespace

// programs/headers/<hex>, written unless a file with this content is there, then hard-linked as
// `name` into `folder`. Hard links, not symlinks: a symlink whose target is longer than 60 bytes
// takes a 4 KiB block of its own on ext4 (163 of them per CUB entry).
std::error_code link_shared_header(int shared, const std::string& hex, const std::string& content, int folder,
                                   const std::string& name)
{
  // ENOENT from linkat: the file looked at was swept, or replaced by another process's write of
  // the same content (a rename over it: the inode looked up has no name left), between the look
  // and the link. Processes staging the same new headers meet that often; each try looks again.
  constexpr int k_tries = 8;
  for (int i = 0; i < k_tries; ++i) {
    if (!holds(shared, hex, content)) {
      if (auto e = write_shared_header(shared, hex, content)) {
        return e;
      }
    }
    if (::linkat(shared, hex.c_str(), folder, name.c_str(), 0) == 0) {
      return {};
    }
    if (errno != ENOENT) {
      return {errno, std::generic_category()};
    }
  }
  return std::make_error_code(std::errc::no_such_file_or_directory);
}

} // namespace kjit::mirror
