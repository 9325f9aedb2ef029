// File stamps: what one stat() says of a path, the clock files are stamped with, and when a
// stamp is too new to stand for its content.
#include "deps/resolver.hpp"

#include <ctime>
#include <sys/stat.h>

namespace kjit::deps {

namespace {

std::function<void(const std::string&, FileStamp&)> g_stamp_hook;

} // namespace

void set_stamp_hook(std::function<void(const std::string& path, FileStamp& stamp)> hook)
{
  g_stamp_hook = std::move(hook);
}

namespace {

FileStamp stamp_from(const struct stat& st)
{
  return {true,
          static_cast<std::int64_t>(st.st_size),
          static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec,
          static_cast<std::int64_t>(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec,
          static_cast<std::uint64_t>(st.st_ino),
          static_cast<std::uint64_t>(st.st_dev)};
}

// The timestamp tick of a time a filesystem gave (too_new()).
std::int64_t tick_of(std::int64_t time_ns)
{
  constexpr std::int64_t second = 1000000000;
  if (time_ns % second == 0) {
    return 2 * second;
  }
  std::int64_t tick = 1;
  while (time_ns % (tick * 10) == 0) {
    tick *= 10;
  }
  return tick;
}

} // namespace

std::int64_t stamp_clock_ns()
{
  struct timespec now {};
  ::clock_gettime(CLOCK_REALTIME_COARSE, &now);
  return static_cast<std::int64_t>(now.tv_sec) * 1000000000 + now.tv_nsec;
}

bool too_new(const FileStamp& stamp, std::int64_t start_ns)
{
  // Recordable when the stamp's tick ended by the start: every later change is stamped in a later tick.
  return stamp.mtime_ns > start_ns - tick_of(stamp.mtime_ns) || stamp.ctime_ns > start_ns - tick_of(stamp.ctime_ns);
}

FileStamp folder_stamp_of(const std::string& dir)
{
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return {};
  }
  FileStamp stamp = stamp_from(st);
  if (g_stamp_hook) {
    g_stamp_hook(dir, stamp);
  }
  return stamp;
}

FileStamp stamp_of(const std::string& path)
{
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return {};
  }
  FileStamp stamp = stamp_from(st);
  if (g_stamp_hook) {
    g_stamp_hook(path, stamp);
  }
  return stamp;
}

} // namespace kjit::deps
