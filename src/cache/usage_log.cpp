// The usage log: one "kjit-usage 1 …" line per process, appended atomically, summed on demand.
#include "cache/usage_log.hpp"

#include "cache/cache_impl.hpp"
#include "util/unique_handle.hpp"

#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <fcntl.h>
#include <sstream>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace kjit {

namespace cache {

namespace {

constexpr off_t k_compact_above = 64 * 1024;

std::string log_path(const std::string& cache_dir)
{
  return cache_dir + "/usage.log";
}

std::string line_of(const UsageTotals& t)
{
  char line[256];
  std::snprintf(line, sizeof line,
                "kjit-usage 1 %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %.3f %.3f\n",
                t.processes, t.memory_hits, t.disk_hits, t.bundle_hits, t.misses, t.compiles, t.compile_ms_saved,
                t.compile_ms_spent);
  return line;
}

UsageTotals sum_lines(const std::string& text)
{
  UsageTotals total;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    UsageTotals t;
    int consumed = 0;
    const int fields = std::sscanf(line.c_str(),
                                   "kjit-usage 1 %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64
                                   " %lf %lf%n",
                                   &t.processes, &t.memory_hits, &t.disk_hits, &t.bundle_hits, &t.misses,
                                   &t.compiles, &t.compile_ms_saved, &t.compile_ms_spent, &consumed);
    // A torn or foreign line is skipped; so is one with a sign (sscanf would wrap "-3"), a count
    // no process can reach, or a time that is not a finite, non-negative number.
    constexpr std::uint64_t k_max_count = std::uint64_t{1} << 48;
    const bool sane = line.find('-', 10) == std::string::npos &&  // after "kjit-usage"
                      t.processes < k_max_count &&
                      t.memory_hits < k_max_count && t.disk_hits < k_max_count && t.bundle_hits < k_max_count &&
                      t.misses < k_max_count && t.compiles < k_max_count && std::isfinite(t.compile_ms_saved) &&
                      std::isfinite(t.compile_ms_spent) && t.compile_ms_saved < 1e15 && t.compile_ms_spent < 1e15;
    if (fields != 8 || static_cast<std::size_t>(consumed) != line.size() || !sane) {
      continue;
    }
    total.processes += t.processes;
    total.memory_hits += t.memory_hits;
    total.disk_hits += t.disk_hits;
    total.bundle_hits += t.bundle_hits;
    total.misses += t.misses;
    total.compiles += t.compiles;
    total.compile_ms_saved += t.compile_ms_saved;
    total.compile_ms_spent += t.compile_ms_spent;
  }
  return total;
}

std::string read_all(int fd)
{
  std::string text;
  char buffer[8192];
  ssize_t got = 0;
  ::lseek(fd, 0, SEEK_SET);
  while ((got = ::read(fd, buffer, sizeof buffer)) > 0) {
    text.append(buffer, static_cast<std::size_t>(got));
  }
  return text;
}

bool write_all(int fd, const std::string& text)
{
  return ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
}

} // namespace

void append_usage(const std::string& cache_dir, const CacheStats& s) noexcept
{
  try {
    UsageTotals t;
    t.processes = 1;
    t.memory_hits = s.memory_hits;
    t.disk_hits = s.disk_hits;
    t.bundle_hits = s.bundle_hits;
    t.misses = s.misses;
    t.compiles = s.compiles;
    t.compile_ms_saved = s.compile_ms_saved;
    t.compile_ms_spent = s.compile_ms_spent;
    if (t.memory_hits + t.disk_hits + t.bundle_hits + t.misses == 0) {
      return;
    }
    util::UniqueFd fd(::open(log_path(cache_dir).c_str(), O_RDWR | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0600));
    if (!fd) {
      return;
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
      return;
    }
    if (st.st_size > k_compact_above && ::flock(fd.get(), LOCK_EX | LOCK_NB) == 0) {
      // Sum the log into one line, in place (same file, so appenders keep their descriptor).
      const std::string summed = line_of(sum_lines(read_all(fd.get())));
      if (::ftruncate(fd.get(), 0) == 0) {
        std::ignore = write_all(fd.get(), summed);
      }
      std::ignore = ::flock(fd.get(), LOCK_UN);
    }
    if (::flock(fd.get(), LOCK_SH) == 0) {
      std::ignore = write_all(fd.get(), line_of(t));  // one write below PIPE_BUF: never interleaved
      std::ignore = ::flock(fd.get(), LOCK_UN);
    }
  } catch (...) {
    // Counts are best effort; a destructor calls this.
  }
}

UsageTotals read_usage(const std::string& cache_dir) noexcept
{
  try {
    util::UniqueFd fd(::open(log_path(cache_dir).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
    struct stat st {};
    if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
      return {};  // none yet, or not a file we wrote (a FIFO would block the reader)
    }
    return sum_lines(read_all(fd.get()));
  } catch (...) {
    return {};
  }
}

std::error_code zero_usage(const std::string& cache_dir)
{
  util::UniqueFd fd(::open(log_path(cache_dir).c_str(), O_WRONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  if (!fd) {
    return errno == ENOENT ? std::error_code{} : std::error_code(errno, std::generic_category());
  }
  ::flock(fd.get(), LOCK_EX);
  const int rc = ::ftruncate(fd.get(), 0);
  return rc == 0 ? std::error_code{} : std::error_code(errno, std::generic_category());
}

} // namespace cache

// The Cache's counters go to the usage log when it goes away, in the process that made it (a
// forked child's copy is not counted twice).
Cache::Impl::~Impl()
{
  if (store && dir.writable && creator == ::getpid()) {
    cache::append_usage(dir.path, stats);
  }
  flush_uses();  // the last uses of this process's hits, in one transaction
}

} // namespace kjit
