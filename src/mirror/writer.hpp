// The mirror writer: mirror entries written on a background thread, off the caller's path.
#pragma once

#include "mirror/mirror.hpp"
#include "store/entry.hpp"
#include "util/fork_safe.hpp"

#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>
#include <sys/types.h>

namespace kjit::mirror {

// What the writer asks the store (called on the writer's thread).
struct WriterSource {
  std::function<bool(const std::string& hex_key)> stored;     // the entry is (still) in the store
  std::function<bool(const std::string& hex_blob)> has_blob;  // a header blob is (still) stored
  std::function<std::vector<IndexRow>()> rows;                // every stored entry, for index.txt
  std::function<void(const std::string& hex_key, std::error_code)> failed;  // a write failed
  // Fills entry.headers from the store's blobs for the headers it names by reference only (a
  // compile let their texts go); false when one can't be read.
  std::function<bool(store::Entry& entry)> load_headers;
};

// Thread-safe. One thread, started on the first job; the destructor finishes every queued job
// (the mirror is complete when the Cache goes away) and never throws. After fork() the child
// never touches the parent's thread: its queued jobs are dropped. A process that cannot start a
// thread (at its limit) runs the jobs on the caller's thread instead.
class Writer {
public:
  Writer(std::string cache_dir, WriterSource source);
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;
  ~Writer();

  // Queues the entry's folder and its index line (entry.headers holds the contents, or the
  // source's load_headers() reads those it names by reference only from the store). An entry
  // removed from the store before its turn is not written (or is removed again right after).
  void write(std::string hex_key, store::Entry entry);
  // Queues a staged folder of links to programs/headers/<sha256>, each written if missing
  // (stage_headers()): called when an entry starts to compile, so that its
  // write() after the commit finishes that folder when it has exactly these headers (a vendored
  // CCCL's 1 691 links and their checks: 60-380 ms the process waited for at exit), else links them
  // itself. A staged folder no write used is removed when the writer goes. A failure is not
  // reported: the entry's own write meets it again and reports it.
  void write_headers(std::vector<EarlyHeader> headers);
  // The entries are gone from the store: drops their queued writes and removes their folders now;
  // the unused shared headers, index.txt and the temps of killed runs follow on the writer's thread.
  void removed(const std::vector<std::string>& hex_keys);
  // Drops every queued write (the mirror is about to be removed or rebuilt).
  void discard();
  // Returns once every queued job is done.
  void flush();

private:
  struct Job {
    enum class Kind { write, tidy, headers } kind;
    std::string hex_key;
    store::Entry entry;
    std::vector<EarlyHeader> headers;  // of a `headers` job
  };
  void run();
  // Hands the queued jobs to the thread (started here on the first job), or runs them on the
  // caller's thread when no thread can be started. Caller holds `lock` on m_mutex.
  void dispatch(std::unique_lock<std::mutex>& lock);
  // Takes the first job and runs it without the lock; false when none is queued.
  bool run_one(std::unique_lock<std::mutex>& lock);
  void do_job(Job& job);

  std::string m_cache_dir;
  WriterSource m_source;
  std::mutex m_mutex;
  util::ForkSafeCondition m_wake;  // a fork()ed child leaves both alone (util/fork_safe.hpp)
  util::ForkSafeCondition m_idle;
  std::deque<Job> m_jobs;
  std::vector<StagedHeaders> m_staged;  // made by `headers` jobs, taken by `write` jobs (the thread's)
  bool m_unused_staged = false;         // one was removed unused: the shared headers are swept at the end
  bool m_busy = false;
  bool m_stop = false;
  std::unique_ptr<std::thread> m_thread;
  pid_t m_pid;
};

} // namespace kjit::mirror
