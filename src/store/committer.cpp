// The Store's writer thread, the wait for its queue, and the drain of every queue at process exit.
#include "store/committer.hpp"

#include <cstdlib>
#include <optional>
#include <set>
#include <system_error>
#include <tuple>
#include <unistd.h>

namespace kjit::store {

namespace {

// Live committers, drained when the process exits (a Cache never destroyed still leaves its
// entries). Never destroyed: a Store closed during static destruction (the default cache) still
// finds them. Fresh in a fork()ed child (util::ForkFresh): the parent's committers are not the
// child's to drain, and a prepare handler locking the mutex deadlocked with drain_at_exit.
struct Live {
  std::mutex mutex;
  std::set<Committer*> committers;
};
const util::ForkFresh<Live> g_live;

std::mutex& live_mutex()
{
  return g_live->mutex;
}

std::set<Committer*>& live()
{
  return g_live->committers;
}

// How deep this thread is inside a committer's lock or wait, or holding what a commit needs
// (HoldsForCommits). A handler of quick_exit() called from a signal handler runs on the
// interrupted thread: waiting on what it holds would never end. initial-exec: no allocation on
// the first access from a signal handler.
__attribute__((tls_model("initial-exec"))) thread_local int t_inside = 0;

void drain_at_exit()
{
  std::lock_guard lock(live_mutex());
  for (Committer* committer : live()) {
    committer->drain();
  }
}

// quick_exit() may come from a signal handler (allowed when every at_quick_exit handler is
// signal-safe). If it interrupted this thread inside a committer, or holding what a commit may
// wait for (HoldsForCommits), the queued commits are given up,
// as _exit() would; otherwise the commits are waited for, but not their reports (`done`), which
// may take locks of the host's that the interrupted thread holds.
void drain_at_quick_exit()
{
  if (t_inside != 0) {
    return;
  }
  std::lock_guard lock(live_mutex());
  for (Committer* committer : live()) {
    committer->settle();
  }
}

} // namespace

HoldsForCommits::HoldsForCommits() noexcept { ++t_inside; }

HoldsForCommits::~HoldsForCommits() { --t_inside; }

void Outstanding::begin()
{
  const HoldsForCommits inside;
  std::lock_guard lock(m_mutex);
  ++m_count;
}

void Outstanding::end() noexcept
{
  const HoldsForCommits inside;
  std::lock_guard lock(m_mutex);
  --m_count;
  m_idle->notify_all();  // under the lock: a waiter may destroy this as soon as it sees zero
}

void Outstanding::wait() const noexcept
{
  if (m_pid != ::getpid()) {
    return;  // a forked child: the mutex may have been copied locked
  }
  const HoldsForCommits inside;
  std::unique_lock lock(m_mutex);
  m_idle->wait(lock, [this] { return m_count == 0; });
}

Committer::Committer()
{
  // quick_exit() runs at_quick_exit handlers and no atexit one: a host (or a library in it) that
  // ends that way keeps its queued commits too. Both are registered once; whichever way the
  // process ends, only one of them runs.
  static std::once_flag once;
  std::call_once(once, [] {
    std::atexit(drain_at_exit);
    std::at_quick_exit(drain_at_quick_exit);
  });
  const HoldsForCommits inside;
  std::lock_guard lock(live_mutex());
  live().insert(this);
}

Committer::~Committer()
{
  const HoldsForCommits inside;
  {
    std::lock_guard lock(live_mutex());
    live().erase(this);
  }
  if (m_pid != ::getpid()) {
    std::ignore = m_thread.release();  // a forked child's copy names a thread of the parent
    return;
  }
  drain();
  {
    std::lock_guard lock(m_mutex);
    m_stop = true;
    m_wake->notify_all();
  }
  if (m_thread) {
    m_thread->join();
  }
}

void Committer::queue(std::function<void()> commit, std::function<void(const StoreError*)> done)
{
  if (m_pid == ::getpid()) {
    const HoldsForCommits inside;
    std::lock_guard lock(m_mutex);
    if (!m_thread) {
      try {
        m_thread = std::make_unique<std::thread>([this] { run(); });
        m_thread_id = m_thread->get_id();
      } catch (const std::system_error&) {
        // No thread can start (the process is at its thread limit): committed here below.
      }
    }
    if (m_thread) {
      m_jobs.push_back({std::move(commit), std::move(done)});
      m_outstanding.begin();  // once queued (the thread takes it after this lock): never counted in vain
      ++m_queued;
      m_wake->notify_one();
      return;
    }
  }
  // A forked child (the Store refuses the write: done() hears why), or no thread: nothing was
  // ever queued, so committing here keeps the order.
  try {
    commit();
  } catch (const StoreError& e) {
    done(&e);
    return;
  } catch (const std::exception& e) {
    const StoreError failure(e.what(), 0);
    done(&failure);
    return;
  }
  done(nullptr);
}

void Committer::settle() const noexcept
{
  if (m_pid != ::getpid()) {
    return;  // a forked child: no thread, and the mutex may have been copied locked
  }
  const HoldsForCommits inside;
  std::unique_lock lock(m_mutex);
  if (m_committed == m_queued || std::this_thread::get_id() == m_thread_id) {
    return;
  }
  const std::uint64_t target = m_queued;
  m_settled->wait(lock, [&] { return m_committed >= target; });
}

void Committer::drain() noexcept
{
  if (m_pid != ::getpid()) {
    return;
  }
  settle();
  bool on_thread = false;
  {
    std::lock_guard lock(m_mutex);
    on_thread = std::this_thread::get_id() == m_thread_id;
  }
  if (!on_thread) {
    m_outstanding.wait();
  }
}

std::uint64_t Committer::committed() const noexcept
{
  const HoldsForCommits inside;
  std::lock_guard lock(m_mutex);
  return m_committed;
}

void Committer::run()
{
  const HoldsForCommits inside;  // (this thread's own: a quick_exit() from `done` does not wait for itself)
  std::unique_lock lock(m_mutex);
  for (;;) {
    m_wake->wait(lock, [this] { return m_stop || !m_jobs.empty(); });
    if (m_jobs.empty()) {
      return;  // stopped, nothing left
    }
    Job job = std::move(m_jobs.front());
    m_jobs.pop_front();
    lock.unlock();
    std::optional<StoreError> failure;
    try {
      job.commit();
    } catch (const StoreError& e) {
      failure.emplace(e);
    } catch (const std::exception& e) {
      failure.emplace(e.what(), 0);
    }
    lock.lock();
    ++m_committed;
    m_settled->notify_all();
    lock.unlock();
    try {
      job.done(failure ? &*failure : nullptr);
    } catch (...) {
      // `done` reports; a report that fails loses only itself
    }
    job = Job{};  // what `done` captured (a compile lock) goes before the job counts as ended
    m_outstanding.end();
    lock.lock();
  }
}

} // namespace kjit::store
