// The Store's writer thread, the wait for its queue, and the drain of every queue at process exit.
#include "store/committer.hpp"

#include "util/own_thread.hpp"

#include <condition_variable>
#include <cstdlib>
#include <map>
#include <optional>
#include <system_error>
#include <tuple>
#include <unistd.h>

namespace kjit::store {

namespace {

// Live committers, drained when the process exits (a Cache never destroyed still leaves its
// entries). Never destroyed: a Store closed during static destruction (the default cache) still
// finds them. Fresh in a fork()ed child (util::ForkFresh): the parent's committers are not the
// child's to drain, and a prepare handler locking the mutex deadlocked with drain_at_exit.
// The mutex is never held while a commit is waited for: a Store opened meanwhile (its committer
// registers here) may hold what that commit needs (the registry of stores). A committer being
// drained is pinned instead, and its destructor waits for that drain to end.
struct Live {
  struct Entry {
    Committer* committer;
    int pins = 0;  // drains at exit under way
  };
  std::mutex mutex;
  std::condition_variable unpinned;  // (never destroyed: no waiter of a parent's in a child's copy)
  std::map<std::uint64_t, Entry> committers;  // by registration order
  std::uint64_t registered = 0;
};
const util::ForkFresh<Live> g_live;

// How deep this thread is inside a committer's lock or wait, or holding what a commit needs
// (HoldsForCommits). A handler of quick_exit() called from a signal handler runs on the
// interrupted thread: waiting on what it holds would never end. initial-exec: no allocation on
// the first access from a signal handler.
__attribute__((tls_model("initial-exec"))) thread_local int t_inside = 0;

// Waits (`wait`: drain() or settle()) for each committer registered before the call, one at a
// time, pinned while it is waited for, without holding the list.
void drain_each(void (Committer::*wait)() const)
{
  const HoldsForCommits inside;  // the list, now and then: a quick_exit() from a signal gives up
  Live& live = *g_live;
  std::uint64_t last = 0;
  std::uint64_t end = 0;
  {
    std::lock_guard lock(live.mutex);
    end = live.registered;
  }
  for (;;) {
    Committer* next = nullptr;
    {
      std::lock_guard lock(live.mutex);
      const auto it = live.committers.upper_bound(last);
      if (it == live.committers.end() || it->first > end) {
        return;
      }
      last = it->first;
      next = it->second.committer;
      ++it->second.pins;
    }
    (next->*wait)();
    std::lock_guard lock(live.mutex);
    --live.committers.at(last).pins;
    live.unpinned.notify_all();
  }
}

void drain_at_exit()
{
  drain_each(&Committer::drain);
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
  drain_each(&Committer::settle);
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
  Live& live = *g_live;
  std::lock_guard lock(live.mutex);
  m_registered = ++live.registered;
  live.committers.emplace(m_registered, Live::Entry{this});
}

Committer::~Committer()
{
  const HoldsForCommits inside;
  {
    Live& live = *g_live;  // (a fork()ed child's is fresh: its parent's committers are not there)
    std::unique_lock lock(live.mutex);
    const auto it = live.committers.find(m_registered);
    if (it != live.committers.end() && it->second.committer == this) {
      live.unpinned.wait(lock, [&] { return it->second.pins == 0; });
      live.committers.erase(it);
    }
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
        m_thread = std::make_unique<std::thread>(util::own_thread("kjit-commit", [this] { run(); }));
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

void Committer::drain() const noexcept
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
