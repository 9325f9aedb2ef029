// programs/index.txt (one line per entry, for people) and the sweep of programs/headers/.
#include "mirror/mirror.hpp"

#include "util/file.hpp"

#include <algorithm>
#include <cerrno>
#include <ctime>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <tuple>
#include <unistd.h>

namespace kjit::mirror {

namespace {

constexpr const char* k_index_head =
  "# kjit cache index: key, arch, created (UTC), program; one line per entry of programs/\n";

std::optional<util::UniqueFd> open_programs(const std::string& cache_dir, bool create, std::error_code& error)
{
  util::UniqueFd root(::open(cache_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!root) {
    error = {errno, std::generic_category()};
    return std::nullopt;
  }
  return util::open_subdir(root.get(), "programs", create, util::mode_in(root.get(), 0755, true), error);
}

std::string one_line(std::string text)
{
  std::replace(text.begin(), text.end(), '\n', ' ');
  return text;
}

} // namespace

std::string index_line(const IndexRow& row)
{
  char date[32] = "?";
  const std::time_t when = static_cast<std::time_t>(row.created_unix);
  std::tm utc{};
  if (::gmtime_r(&when, &utc) != nullptr) {
    std::strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S", &utc);
  }
  return row.key + "  " + one_line(row.arch) + "  " + date + " UTC  " + one_line(row.program_name) +
         (row.failed ? "  (compile error)" : "") + "\n";
}

namespace {

// Whether the index file open as `fd` already has a line for `key`. Read a piece at a time, with
// the end of the one before kept (a line may span two): an index made huge (damage) costs no
// memory in proportion.
bool lists_key(int fd, const std::string& key)
{
  const std::string line_start = "\n" + key + "  ";
  std::string text = "\n";  // the file's first line starts like any other
  char buffer[65536];
  for (off_t at = 0;;) {
    const ssize_t got = ::pread(fd, buffer, sizeof buffer, at);
    if (got <= 0) {
      return false;
    }
    text.append(buffer, static_cast<std::size_t>(got));
    at += got;
    if (text.find(line_start) != std::string::npos) {
      return true;
    }
    text.erase(0, text.size() - std::min(text.size(), line_start.size() - 1));
  }
}

} // namespace

std::error_code append_index(const std::string& cache_dir, const IndexRow& row, bool may_be_listed)
{
  std::error_code error;
  auto programs = open_programs(cache_dir, true, error);
  if (!programs) {
    return error;
  }
  // A line already there (an entry written again after a quarantine) is not added twice. Another
  // process's write_index() may replace the file while this line goes into the old one: then it is
  // appended to the new file too (unless that one lists it already).
  for (int attempt = 0; attempt < 4; ++attempt) {
    const int mode = util::mode_in(programs->get(), 0644, false);  // a shared cache's: the group appends too
    util::UniqueFd fd(
      ::openat(programs->get(), "index.txt", O_RDWR | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, mode));
    if (!fd) {
      return {errno, std::generic_category()};
    }
    util::set_group_mode(fd.get(), mode);  // (fails harmlessly on another member's file)
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) {
      return {errno, std::generic_category()};
    }
    if (!((may_be_listed || attempt > 0) && lists_key(fd.get(), row.key))) {
      const std::string line = (st.st_size == 0 ? k_index_head : "") + index_line(row);
      const ssize_t written = ::write(fd.get(), line.data(), line.size());
      if (written != static_cast<ssize_t>(line.size())) {
        return {errno, std::generic_category()};
      }
    }
    struct stat now {};
    if (::fstatat(programs->get(), "index.txt", &now, AT_SYMLINK_NOFOLLOW) != 0 ||
        (now.st_ino == st.st_ino && now.st_dev == st.st_dev)) {
      return {};  // still the file written (or removed with the mirror)
    }
  }
  return {};
}

std::error_code write_index(const std::string& cache_dir, std::vector<IndexRow> rows)
{
  std::sort(rows.begin(), rows.end(), [](const IndexRow& a, const IndexRow& b) {
    return std::tie(a.program_name, a.arch, a.key) < std::tie(b.program_name, b.arch, b.key);
  });
  std::string text = k_index_head;
  for (const IndexRow& row : rows) {
    text += index_line(row);
  }
  std::error_code error;
  auto programs = open_programs(cache_dir, true, error);
  if (!programs) {
    return error;
  }
  return util::write_file_atomic(programs->get(), "index.txt", text, util::mode_in(programs->get(), 0644, false),
                                 util::Durability::none);
}

std::size_t sweep_headers(const std::string& cache_dir, const std::function<bool(const std::string& hex)>& keep)
{
  std::error_code error;
  auto programs = open_programs(cache_dir, false, error);
  if (!programs) {
    return 0;
  }
  // Dot files are temps of a writer at work, or of a killed one once older than a writer takes
  // (write_file_atomic's ".<name>.tmp.<pid>.<n>": nothing else would ever remove them, and the
  // size limit counts them); a file an entry folder still links is in use.
  const std::time_t now = ::time(nullptr);
  const auto pick = [&](int, const std::string& name, const struct stat& st) {
    if (name[0] == '.') {
      return now - st.st_mtime > k_stale_temp_seconds;
    }
    return (st.st_nlink <= 1 || !S_ISREG(st.st_mode)) && !keep(name);
  };
  return remove_picked(programs->get(), "headers", pick,
                       [](int dir, const std::string& name) { std::ignore = ::unlinkat(dir, name.c_str(), 0); });
}

} // namespace kjit::mirror
