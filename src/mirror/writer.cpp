// The mirror writer's queue and thread.
#include "mirror/writer.hpp"

#include "util/file_size_signal.hpp"
#include "util/file.hpp"
#include "util/own_thread.hpp"

#include <algorithm>
#include <fcntl.h>
#include <set>
#include <unistd.h>

namespace kjit::mirror {

Writer::Writer(std::string cache_dir, WriterSource source)
  : m_cache_dir(std::move(cache_dir)), m_source(std::move(source)), m_pid(::getpid())
{
}

Writer::~Writer()
{
  if (::getpid() != m_pid) {
    std::ignore = m_thread.release();  // the parent's thread: not ours to join
    return;
  }
  try {
    flush();
  } catch (...) {
  }
  {
    std::lock_guard lock(m_mutex);
    m_stop = true;
  }
  m_wake->notify_all();
  if (m_thread && m_thread->joinable()) {
    m_thread->join();
  }
  for (const StagedHeaders& staged : m_staged) {
    remove_staged(m_cache_dir, staged);  // no entry came to use it (not stored, other headers)
    m_unused_staged = true;
  }
  if (m_unused_staged && m_source.has_blob) {
    // Their links kept shared headers alive through the tidy's sweep (an entry evicted at once,
    // KJIT_MAX_SIZE): the ones no entry links and the store lacks go now.
    try {
      sweep_headers(m_cache_dir, m_source.has_blob);
    } catch (...) {
    }
  }
}

void Writer::dispatch(std::unique_lock<std::mutex>& lock)
{
  if (!m_thread && m_busy) {
    return;  // a caller is running the queue (no thread could start): it takes this job too
  }
  if (!m_thread) {
    try {
      m_thread = std::make_unique<std::thread>(util::own_thread("kjit-mirror", [this] { run(); }));
    } catch (const std::system_error&) {
      // No thread can be started (EAGAIN): written here, now, unless another caller is already
      // running the queue (it takes these too).
      while (!m_busy && run_one(lock)) {
      }
      return;
    }
  }
  m_wake->notify_one();
}

bool Writer::run_one(std::unique_lock<std::mutex>& lock)
{
  if (m_jobs.empty()) {
    return false;
  }
  Job job = std::move(m_jobs.front());
  m_jobs.pop_front();
  m_busy = true;
  lock.unlock();
  try {
    do_job(job);
  } catch (...) {
    if (m_source.failed) {
      m_source.failed(job.hex_key, std::make_error_code(std::errc::not_enough_memory));
    }
  }
  lock.lock();
  m_busy = false;
  m_idle->notify_all();
  // What the job holds (an entry's header texts: a vendored CCCL's 13.7 MB) is freed after a
  // flush() was told, not before it returns (1.5 ms of `kjit compile`'s wait after a miss).
  lock.unlock();
  job = Job{};
  lock.lock();
  return true;
}

void Writer::write(std::string hex_key, store::Entry entry)
{
  if (::getpid() != m_pid) {
    return;
  }
  std::unique_lock lock(m_mutex);
  m_jobs.push_back({Job::Kind::write, std::move(hex_key), std::move(entry), {}});
  dispatch(lock);
}

void Writer::write_headers(std::vector<EarlyHeader> headers)
{
  if (::getpid() != m_pid) {
    return;
  }
  std::unique_lock lock(m_mutex);
  m_jobs.push_back({Job::Kind::headers, {}, {}, std::move(headers)});
  dispatch(lock);
}

void Writer::removed(const std::vector<std::string>& hex_keys)
{
  const std::set<std::string> gone(hex_keys.begin(), hex_keys.end());
  {
    std::unique_lock lock(m_mutex);
    m_jobs.erase(std::remove_if(m_jobs.begin(), m_jobs.end(),
                                [&](const Job& job) { return job.kind == Job::Kind::write && gone.count(job.hex_key) != 0; }),
                 m_jobs.end());
    // A job under way finishes first: then the folder removed below stays removed.
    m_idle->wait(lock, [this] { return !m_busy || ::getpid() != m_pid; });
  }
  for (const std::string& hex : hex_keys) {
    remove_entry(m_cache_dir, hex);
  }
  if (::getpid() != m_pid) {
    return;
  }
  std::unique_lock lock(m_mutex);
  if (m_jobs.empty() || m_jobs.back().kind != Job::Kind::tidy) {
    m_jobs.push_back({Job::Kind::tidy, {}, {}, {}});
  }
  dispatch(lock);
}

void Writer::discard()
{
  std::unique_lock lock(m_mutex);
  m_jobs.clear();
  m_idle->wait(lock, [this] { return !m_busy || ::getpid() != m_pid; });
}

void Writer::flush()
{
  std::unique_lock lock(m_mutex);
  if (::getpid() != m_pid) {
    return;
  }
  m_idle->wait(lock, [this] { return m_jobs.empty() && !m_busy; });
}

void Writer::run()
{
  std::unique_lock lock(m_mutex);
  for (;;) {
    m_wake->wait(lock, [this] { return m_stop || !m_jobs.empty(); });
    if (!run_one(lock)) {
      return;  // stopping, nothing left
    }
  }
}

void Writer::do_job(Job& job)
{
  const util::FileSizeSignalBlock no_sigxfsz;  // a file past ulimit -f fails (EFBIG), never kills the host
  if (job.kind == Job::Kind::tidy) {
    // Temps of killed runs (older than k_stale_temp_seconds) go too: a fleet whose jobs get killed
    // piled them up until someone rebuilt the mirror, and the size limit counted them.
    prune(m_cache_dir, nullptr);
    sweep_headers(m_cache_dir, m_source.has_blob);
    if (const std::error_code error = write_index(m_cache_dir, m_source.rows()); error && m_source.failed) {
      m_source.failed("index.txt", error);
    }
    return;
  }
  if (job.kind == Job::Kind::headers) {
    // A failure is left: the entry's write meets it again.
    if (auto staged = stage_headers(m_cache_dir, std::move(job.headers))) {
      m_staged.push_back(std::move(*staged));
    }
    // NVRTC compiles one program at a time per process: more staged folders than this are of
    // compiles that came to other headers or to nothing (a long-lived host would pile them up).
    constexpr std::size_t k_most_staged = 4;
    while (m_staged.size() > k_most_staged) {
      remove_staged(m_cache_dir, m_staged.front());
      m_staged.erase(m_staged.begin());
      m_unused_staged = true;
    }
    return;
  }
  // A staged folder of exactly this entry's headers is finished, not made again.
  std::optional<StagedHeaders> staged;
  if (!m_staged.empty() && (!job.entry.headers.empty() || !job.entry.header_refs.empty())) {
    const std::map<std::string, std::string> hashes = header_hashes(job.entry);
    const auto it = std::find_if(m_staged.begin(), m_staged.end(), [&](const StagedHeaders& s) { return s.hashes == hashes; });
    if (it != m_staged.end()) {
      staged = std::move(*it);
      m_staged.erase(it);
    }
  }
  const bool by_reference =
    std::any_of(job.entry.header_refs.begin(), job.entry.header_refs.end(),
                [&](const store::HeaderRef& ref) { return job.entry.headers.count(ref.name) == 0; });
  if (!staged && by_reference) {
    // Headers whose texts the compile let go (their blobs stored with the entry): read from the
    // store, which holds the entry by now.
    if (!m_source.load_headers || !m_source.load_headers(job.entry)) {
      if (!m_source.stored(job.hex_key)) {
        return;  // removed before its turn (its blobs with it): no folder, and nothing failed
      }
      if (m_source.failed) {
        m_source.failed(job.hex_key, std::make_error_code(std::errc::no_such_file_or_directory));
      }
      return;
    }
  }
  bool replaced = false;
  std::error_code error = write_entry(m_cache_dir, job.hex_key, job.entry, &replaced, staged ? &*staged : nullptr);
  if (error && staged && by_reference && m_source.load_headers && m_source.load_headers(job.entry)) {
    error = write_entry(m_cache_dir, job.hex_key, job.entry, &replaced, nullptr);  // its staged folder went meanwhile
  }
  if (!error) {
    if (!m_source.stored(job.hex_key)) {
      remove_entry(m_cache_dir, job.hex_key);  // removed (by another process) while it was written
      return;
    }
    error = append_index(m_cache_dir, {job.hex_key, job.entry.program_name, job.entry.binary.arch,
                                       job.entry.created_unix, job.entry.kind == store::EntryKind::failure},
                         replaced);
  }
  if (error && m_source.failed) {
    m_source.failed(job.hex_key, error);
  }
}

} // namespace kjit::mirror
