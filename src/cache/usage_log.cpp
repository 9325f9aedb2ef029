// The usage log: one "kjit-usage 3 …" line per process, appended atomically, summed on demand.
#include "cache/usage_log.hpp"

#include "cache/cache_impl.hpp"
#include "util/file.hpp"
#include "util/file_size_signal.hpp"
#include "util/unique_handle.hpp"

#include <cctype>
#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <fcntl.h>
#include <optional>
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

// The counts of a line, summed field by field.
constexpr std::uint64_t UsageTotals::*k_counts[] = {
  &UsageTotals::processes,     &UsageTotals::memory_hits,       &UsageTotals::disk_hits,
  &UsageTotals::bundle_hits,   &UsageTotals::misses,            &UsageTotals::compiles,
  &UsageTotals::remote_hits,   &UsageTotals::remote_misses,     &UsageTotals::remote_errors,
  &UsageTotals::remote_bytes_read, &UsageTotals::remote_bytes_written,
  &UsageTotals::uncached_formed_name, &UsageTotals::uncached_disk_name, &UsageTotals::uncached_time,
  &UsageTotals::uncached_file_option, &UsageTotals::uncached_probe, &UsageTotals::uncached_names_file,
  &UsageTotals::uncached_environment,
};
// How many of k_counts a line of each version holds (version 1: up to the compiles; 2: the remote
// counts; 3: the uncached compiles by reason).
constexpr std::size_t k_counts_of_version[] = {6, 11, 18};

// Appends the decimal digits of `value`.
void append_count(std::string& out, std::uint64_t value)
{
  char digits[20];
  int n = 0;
  do {
    digits[n++] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value != 0);
  while (n > 0) {
    out += digits[--n];
  }
}

// Appends `ms` as "%.3f" does for the times a process can reach (rounded to the microsecond);
// printf only for the others. A warm process writes this line at exit, and printf's
// floating-point code is ≈ 3 pages of libc that nothing else of a hit touches (docs/benchmarks.md).
void append_ms(std::string& out, double ms)
{
  if (!(ms >= 0 && ms < 1e12) || std::signbit(ms)) {
    char text[64];
    std::snprintf(text, sizeof text, "%.3f", ms);
    out += text;
    return;
  }
  // Rounded as printf rounds the exact value (ties to even): ms * 1000 is exact in x87's 64-bit
  // mantissa (53 + 10 bits), where a double product is rounded before llround sees it.
  const long double exact = static_cast<long double>(ms) * 1000;
  auto thousandths = static_cast<std::uint64_t>(exact);
  const long double rest = exact - static_cast<long double>(thousandths);
  if (rest > 0.5L || (rest == 0.5L && thousandths % 2 == 1)) {
    ++thousandths;
  }
  append_count(out, thousandths / 1000);
  out += '.';
  const auto fraction = static_cast<unsigned>(thousandths % 1000);
  out += static_cast<char>('0' + fraction / 100);
  out += static_cast<char>('0' + fraction / 10 % 10);
  out += static_cast<char>('0' + fraction % 10);
}

} // namespace

// Version 3 adds the uncached compiles by reason, 2 the remote counts; lines of older versions
// (older kjit) still count.
std::string usage_line(const UsageTotals& t)
{
  std::string line = "kjit-usage 3";
  line.reserve(160);
  for (const auto count : k_counts) {
    line += ' ';
    append_count(line, t.*count);
  }
  line += ' ';
  append_ms(line, t.compile_ms_saved);
  line += ' ';
  append_ms(line, t.compile_ms_spent);
  line += '\n';
  return line;
}

namespace {

// One line's counts, or nullopt for a torn or foreign line.
std::optional<UsageTotals> parse_line(const std::string& line)
{
  UsageTotals t;
  unsigned version = 0;
  int consumed = 0;
  if (std::sscanf(line.c_str(), "kjit-usage %u%n", &version, &consumed) != 1 || version < 1 ||
      version > std::size(k_counts_of_version)) {
    return std::nullopt;
  }
  // A line with a sign is skipped (strtoull would wrap "-3"), as is a count no process can reach
  // or a time that is not a finite, non-negative number.
  if (line.find('-', 10) != std::string::npos) {  // after "kjit-usage"
    return std::nullopt;
  }
  constexpr std::uint64_t k_max_count = std::uint64_t{1} << 48;
  const char* at = line.c_str() + consumed;
  for (std::size_t i = 0; i < k_counts_of_version[version - 1]; ++i) {
    char* end = nullptr;
    if (*at != ' ' || !std::isdigit(static_cast<unsigned char>(at[1]))) {
      return std::nullopt;
    }
    errno = 0;
    const unsigned long long value = std::strtoull(at + 1, &end, 10);
    if (errno != 0 || value >= k_max_count) {
      return std::nullopt;
    }
    t.*k_counts[i] = value;
    at = end;
  }
  int rest = 0;
  if (std::sscanf(at, " %lf %lf%n", &t.compile_ms_saved, &t.compile_ms_spent, &rest) != 2 || at[rest] != '\0' ||
      *at != ' ') {
    return std::nullopt;
  }
  const bool sane = std::isfinite(t.compile_ms_saved) && std::isfinite(t.compile_ms_spent) && t.compile_ms_saved < 1e15 &&
                    t.compile_ms_spent < 1e15;
  return sane ? std::optional<UsageTotals>(t) : std::nullopt;
}

UsageTotals sum_lines(const std::string& text)
{
  UsageTotals total;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (const std::optional<UsageTotals> t = parse_line(line)) {
      for (const auto count : k_counts) {
        total.*count += (*t).*count;
      }
      total.compile_ms_saved += t->compile_ms_saved;
      total.compile_ms_spent += t->compile_ms_spent;
    }
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

void append_usage(const std::string& cache_dir, const CacheStats& s, bool shared) noexcept
{
  try {
    UsageTotals t;
    t.processes = 1;
    t.memory_hits = s.memory_hits;
    t.disk_hits = s.disk_hits;
    t.bundle_hits = s.bundle_hits;
    t.misses = s.misses;
    t.compiles = s.compiles;
    t.remote_hits = s.remote_hits;
    t.remote_misses = s.remote_misses;
    t.remote_errors = s.remote_errors;
    t.remote_bytes_read = s.remote_bytes_read;
    t.remote_bytes_written = s.remote_bytes_written;
    t.uncached_formed_name = s.uncached_formed_name;
    t.uncached_disk_name = s.uncached_disk_name;
    t.uncached_time = s.uncached_time;
    t.uncached_file_option = s.uncached_file_option;
    t.uncached_probe = s.uncached_probe;
    t.uncached_names_file = s.uncached_names_file;
    t.uncached_environment = s.uncached_environment;
    t.compile_ms_saved = s.compile_ms_saved;
    t.compile_ms_spent = s.compile_ms_spent;
    if (t.memory_hits + t.disk_hits + t.bundle_hits + t.remote_hits + t.misses == 0) {
      return;
    }
    // From the setting, not by a stat of the folder: every process with a lookup writes this line
    // at its exit, a warm one included.
    const int mode = shared ? 0660 : 0600;
    util::UniqueFd fd(::open(log_path(cache_dir).c_str(), O_RDWR | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, mode));
    if (!fd) {
      return;
    }
    util::set_group_mode(fd.get(), mode);
    // A log past ulimit -f: the line is lost, the host (often at its exit) is not killed.
    const util::FileSizeSignalBlock no_sigxfsz;
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
      return;
    }
    if (st.st_size > k_compact_above && ::flock(fd.get(), LOCK_EX | LOCK_NB) == 0) {
      // Sum the log into one line, in place (same file, so appenders keep their descriptor).
      const std::string summed = usage_line(sum_lines(read_all(fd.get())));
      if (::ftruncate(fd.get(), 0) == 0) {
        std::ignore = write_all(fd.get(), summed);
      }
      std::ignore = ::flock(fd.get(), LOCK_UN);
    }
    if (::flock(fd.get(), LOCK_SH) == 0) {
      std::ignore = write_all(fd.get(), usage_line(t));  // one write below PIPE_BUF: never interleaved
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
    if (remote != nullptr) {
      remote->flush();  // the uploads' bytes count
    }
    cache::append_usage(dir.path, stats_now(), config.shared_cache);
  }
  flush_uses();  // the last uses of this process's hits, in one transaction
}

} // namespace kjit
