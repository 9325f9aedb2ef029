// A damaged record moved aside (quarantine), and the whole store checked and repaired.
#include "store/store.hpp"

#include "config/log.hpp"
#include "store/blob_txn.hpp"
#include "store/check.hpp"
#include "store/committer.hpp"
#include "util/file_size_signal.hpp"
#include "store/isolated.hpp"
#include "store/store_impl.hpp"
#include "util/file.hpp"
#include "util/fork_safe.hpp"
#include "util/stopwatch.hpp"

#include <algorithm>
#include <cerrno>
#include <fcntl.h>
#include <climits>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <mutex>
#include <set>
#include <sys/statvfs.h>
#include <sys/stat.h>
#include <system_error>
#include <unistd.h>

namespace kjit::store {

bool Store::quarantine(std::string_view key, std::string_view bytes, const std::string& reason)
{
  m_committer->settle();
  if (!m_writable || m_impl->pid != ::getpid()) {
    return false;  // (a fork()ed child's copy: refused, as every write is)
  }
  Impl& impl = *m_impl;
  std::uint64_t seen = 0;
  std::size_t map_size = 0;
  std::string dir;
  {
    std::shared_lock shared = impl.shared_guard();
    if (impl.retired || impl.env == nullptr) {
      return false;
    }
    seen = impl.generation.load();
    map_size = impl.map_bytes;
    dir = impl.lmdb_path;
  }
  const std::string row_key = std::string(key) + ":" + std::to_string(::time(nullptr));
  const std::string row = reason + "\n" + std::string(bytes);
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    return false;
  }
  util::UniqueFd read_end(pipe_fds[0]);
  util::UniqueFd write_end(pipe_fds[1]);
  std::string detail;
  const IsolatedOutcome outcome = run_isolated(
    [&] {
      const util::FileSizeSignalBlock no_sigxfsz;  // a write past ulimit -f fails, never reads as damage
      std::size_t rows = 0;
      std::string why;
      if (const Walk walk = walk_store(dir, false, rows, why); walk != Walk::sound) {
        why = (walk == Walk::damaged ? "d" : "w") + why;  // w: left in place, as a failed write is
      } else if (const int rc = quarantine_in_place(dir, map_size, key, bytes, row_key, row, k_quarantine_rows, why);
                 rc != MDB_SUCCESS) {
        why = (is_structural(rc) ? "d" : "w") + why;  // w: the store walked sound, the write failed
      } else {
        return 0;
      }
      std::ignore = ::write(write_end.get(), why.data(), why.size());
      return 1;
    },
    IsolatedLimits{k_check_seconds, map_size + k_check_memory}, detail);
  write_end.reset();
  char buffer[512];
  const ssize_t got = ::read(read_end.get(), buffer, sizeof buffer);
  const bool write_failed = got > 0 && buffer[0] == 'w';
  if (got > 1) {
    detail = std::string(buffer + 1, static_cast<std::size_t>(got - 1)) + (detail.empty() ? "" : " (" + detail + ")");
  }
  if (outcome == IsolatedOutcome::ok) {
    return true;
  }
  if (outcome == IsolatedOutcome::no_child || (outcome == IsolatedOutcome::failed && write_failed)) {
    // Left as it is (a full disk, an I/O error: the store walked sound): the record is
    // recognized, and never served, on every read.
    warn_once("a damaged record in " + path() + " could not be moved aside: " + detail);
    return false;
  }
  impl.recover("a damaged record (" + reason + ") and the check of the store around it: " + detail, seen);
  return true;
}

CheckReport Store::check(bool repair)
{
  // No wait for the queue: the walk before the first write runs this beside the writer thread.
  CheckReport report;
  Impl& impl = *m_impl;
  if (impl.pid != ::getpid()) {
    // A fork()ed child's copy: refused (a parent's thread may hold the guard its repair takes).
    report.not_checked = true;
    report.detail = "the store at " + impl.path + " was opened before fork(); open a new cache in the child";
    return report;
  }
  ++impl.walks;
  std::uint64_t seen = 0;
  std::size_t map_size = 0;
  bool no_lock = false;
  std::string dir;
  {
    std::shared_lock shared = impl.shared_guard();
    if (impl.retired || impl.env == nullptr) {
      report.detail = "no store";
      return report;
    }
    seen = impl.generation.load();
    map_size = impl.map_bytes;
    no_lock = impl.mode == Mode::read_only_no_lock;
    dir = impl.lmdb_path;
  }
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    report.detail = std::string("pipe: ") + std::strerror(errno);
    return report;
  }
  util::UniqueFd read_end(pipe_fds[0]);
  util::UniqueFd write_end(pipe_fds[1]);
  const util::Stopwatch watch;
  std::string detail;
  const IsolatedOutcome outcome = run_isolated(
    [&] {
      std::size_t rows = 0;
      std::string why;
      const Walk walk = walk_store(dir, no_lock, rows, why);
      // The first byte says what the walk found: s(ound, then the rows), d(amaged), or n(ot run).
      const std::string message = walk == Walk::sound ? "s" + std::to_string(rows) : (walk == Walk::damaged ? "d" : "n") + why;
      std::ignore = ::write(write_end.get(), message.data(), message.size());
      return walk == Walk::sound ? 0 : 1;
    },
    IsolatedLimits{k_check_seconds, map_size + k_check_memory}, detail);
  write_end.reset();
  report.ms = watch.elapsed_ms();
  char buffer[512];
  const ssize_t got = ::read(read_end.get(), buffer, sizeof buffer);
  const char found = got > 0 ? buffer[0] : 'd';
  const std::string message = got > 1 ? std::string(buffer + 1, static_cast<std::size_t>(got - 1)) : std::string();
  report.ok = outcome == IsolatedOutcome::ok;
  if (report.ok) {
    report.rows = std::strtoull(message.c_str(), nullptr, 10);
    report.detail = "walked " + message + " rows";
  } else {
    report.detail = message.empty() ? detail : message + (detail.empty() ? "" : " (" + detail + ")");
    // A walk that could not run (no memory to map the store, as a child that can't be started)
    // says nothing about the store: left as it is.
    const bool not_run = outcome == IsolatedOutcome::no_child || (outcome == IsolatedOutcome::failed && found == 'n');
    if (not_run) {
      report.not_checked = true;
      report.detail = "not checked: " + report.detail;
    } else if (repair) {
      impl.recover("its check failed: " + report.detail, seen);
    }
  }
  return report;
}

} // namespace kjit::store
