// File helpers built on POSIX *at() calls so no symlink is followed where the caller says so.
#include "util/file.hpp"

#include <atomic>
#include <cerrno>
#include <climits>
#include <fcntl.h>
#include <string>
#include <sys/stat.h>
#include <tuple>
#include <unistd.h>

namespace kjit::util {

namespace detail {
int close_fd(int fd) noexcept
{
  return ::close(fd);
}
} // namespace detail

namespace {

std::error_code last_error()
{
  return {errno, std::generic_category()};
}

std::error_code write_all(int fd, std::string_view content)
{
  while (!content.empty()) {
    const ssize_t written = ::write(fd, content.data(), content.size());
    if (written < 0) {
      if (errno == EINTR) {
        continue;
      }
      return last_error();
    }
    content.remove_prefix(static_cast<std::size_t>(written));
  }
  return {};
}

std::string temp_name(const std::string& name)
{
  static std::atomic<unsigned> counter{0};
  return "." + name + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
}

} // namespace

std::optional<std::string> read_file(const std::string& path, std::error_code& error)
{
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) {
    error = last_error();
    return std::nullopt;
  }
  // Read into a string of the file's size, not appended to from a buffer: each byte is copied
  // once, not again each time the string grows (a vendored CCCL's 13.7 MB of headers, read beside
  // NVRTC, which slows with every byte kjit moves through the caches: docs/benchmarks.md).
  std::string content;
  struct stat st {};
  if (::fstat(fd.get(), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
    content.resize(static_cast<std::size_t>(st.st_size));
  }
  std::size_t filled = 0;
  char spill[65536];  // past the size fstat gave (a file that grew, or one of no size: /proc)
  for (;;) {
    const bool within = filled < content.size();
    char* const at = within ? content.data() + filled : spill;
    const ssize_t got = ::read(fd.get(), at, within ? content.size() - filled : sizeof spill);
    if (got < 0) {
      if (errno == EINTR) {
        continue;
      }
      error = last_error();
      return std::nullopt;
    }
    if (got == 0) {
      content.resize(filled);  // shrank since fstat
      return content;
    }
    if (!within) {
      content.append(spill, static_cast<std::size_t>(got));
    }
    filled += static_cast<std::size_t>(got);
  }
}

std::error_code write_file_atomic(int dir_fd, const std::string& name, std::string_view content, int mode,
                                  Durability durability)
{
  const std::string temp = temp_name(name);
  UniqueFd fd(::openat(dir_fd, temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode));
  if (!fd) {
    return last_error();
  }
  set_group_mode(fd.get(), mode);
  std::error_code error = write_all(fd.get(), content);
  if (!error && durability == Durability::fsync && ::fsync(fd.get()) != 0) {
    error = last_error();
  }
  if (!error && ::close(fd.release()) != 0) {
    error = last_error();
  }
  // renameat replaces `name` itself, even when `name` is a symlink: the link is never followed.
  if (!error && ::renameat(dir_fd, temp.c_str(), dir_fd, name.c_str()) != 0) {
    error = last_error();
  }
  if (error) {
    std::ignore = ::unlinkat(dir_fd, temp.c_str(), 0);
  }
  return error;
}

std::error_code write_file_atomic(const std::string& path, std::string_view content, int mode)
{
  const auto slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  UniqueFd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir_fd) {
    return last_error();
  }
  return write_file_atomic(dir_fd.get(), path.substr(slash + 1), content, mode);
}

std::optional<UniqueFd> open_subdir(int dir_fd, const std::string& name, bool create, int mode, std::error_code& error)
{
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos) {
    error = std::make_error_code(std::errc::invalid_argument);
    return std::nullopt;
  }
  const bool made = create && ::mkdirat(dir_fd, name.c_str(), static_cast<mode_t>(mode)) == 0;
  if (create && !made && errno != EEXIST) {
    error = last_error();
    return std::nullopt;
  }
  UniqueFd fd(::openat(dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) {
    error = last_error();
    return std::nullopt;
  }
  if (made) {
    set_group_mode(fd.get(), mode);
  }
  return fd;
}

std::error_code create_directories(const std::string& path, int mode)
{
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    return {};  // the common case (a warm start): one stat, no mkdir of every existing parent
  }
  std::string prefix;
  std::size_t pos = 0;
  while (pos != std::string::npos) {
    pos = path.find('/', pos + 1);
    prefix = path.substr(0, pos);
    if (prefix.empty()) {
      continue;
    }
    if (::mkdir(prefix.c_str(), static_cast<mode_t>(mode)) == 0) {
      if ((mode & S_IWGRP) != 0) {
        std::ignore = ::chmod(prefix.c_str(), static_cast<mode_t>(mode));  // past the umask
      }
    } else if (errno != EEXIST) {
      return last_error();
    }
  }
  if (::stat(path.c_str(), &st) != 0) {
    return last_error();
  }
  return S_ISDIR(st.st_mode) ? std::error_code{} : std::make_error_code(std::errc::not_a_directory);
}

int mode_in(int dir_fd, int mode, bool folder)
{
  struct stat st {};
  if (::fstat(dir_fd, &st) != 0 || (st.st_mode & S_IWGRP) == 0) {
    return mode;
  }
  const int owner = mode & S_IRWXU;
  return owner | (owner >> 3) | (folder ? S_ISGID : 0);
}

int mode_in(const std::string& dir, int mode, bool folder)
{
  const UniqueFd fd(::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  return fd ? mode_in(fd.get(), mode, folder) : mode;
}

void set_group_mode(int fd, int mode)
{
  if ((mode & S_IWGRP) != 0) {
    std::ignore = ::fchmod(fd, static_cast<mode_t>(mode));
  }
}

bool is_regular_file(const std::string& path)
{
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool is_directory(const std::string& path)
{
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string canonical_path(const std::string& dir)
{
  char buffer[PATH_MAX];
  return ::realpath(dir.c_str(), buffer) != nullptr ? std::string(buffer) : dir;
}

// The path of the open folder `fd` (of `dir`), as realpath() would give it: the kernel's name for
// it, one readlink where realpath() reads every component of the path again.
std::string canonical_path(const std::string& dir, int fd)
{
  char buffer[PATH_MAX];
  const std::string link = "/proc/self/fd/" + std::to_string(fd);
  const ssize_t size = ::readlink(link.c_str(), buffer, sizeof buffer);
  const std::string_view name(buffer, size > 0 ? static_cast<std::size_t>(size) : 0);
  constexpr std::string_view deleted = " (deleted)";
  if (size <= 0 || static_cast<std::size_t>(size) == sizeof buffer || name.front() != '/' ||
      (name.size() >= deleted.size() && name.substr(name.size() - deleted.size()) == deleted)) {
    return canonical_path(dir);  // no /proc, or a name the kernel marks: as before
  }
  return std::string(name);
}

} // namespace kjit::util
