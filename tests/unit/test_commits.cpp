// A miss's commit runs on the store's writer thread: get() returns before it, the key's compile
// lock is held until it is durable, and a closing Cache or an exiting process waits for it.
#include <boost/test/unit_test.hpp>

#include "fixture.hpp"
#include "write_lock.hpp"

#include "store/store.hpp"

#include <kjit/compile.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <pthread.h>
#include <sstream>
#include <csignal>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace kjit::test;

namespace {

const kjit::Arch k_sm90 = kjit::Arch::parse("sm_90");

// A first miss in `cache`: its store opened and walked, the toolchain recorded, and the first
// write's count for KJIT_MAX_SIZE made (it reads the store, so it waits for the commit).
void warm_up(kjit::Cache& cache)
{
  BOOST_TEST_REQUIRE(cache.get(small_program("warm_up"), k_sm90) != nullptr);
  // Its commit in: the tests hold the store's write lock next, and a lookup reads after this
  // process's queued commits (a process's first write no longer waits for its own commit).
  cache.stats();
}

// The next process finds `tag`'s entry on the disk and compiles nothing.
void found_on_disk(const kjit::Config& config, const std::string& tag)
{
  kjit::Cache cache(config);
  BOOST_TEST(cache.get(small_program(tag), k_sm90) != nullptr);
  BOOST_TEST(cache.stats().disk_hits == 1u);
  BOOST_TEST(cache.stats().compiles == 0u);
}

// How miss_then_end() ends its child.
enum class End {
  destroy,     // the Cache destroyed, then _exit(): the destructor alone must have waited
  exit,        // exit() with the Cache never destroyed: the atexit handler waits
  quick_exit,  // quick_exit(): no atexit handler, no destructor; the at_quick_exit handler waits
};

// Compiles `tag` in a forked child (a Cache of its own) while another process holds the store's
// write lock for two seconds, then ends the child at once as `end` says; returns the child's wait
// status (SIGALRM if the end hangs).
int miss_then_end(const kjit::Config& config, const std::string& tag, End end)
{
  const pid_t child = ::fork();
  if (child == 0) {
    ::alarm(60);
    try {
      auto* cache = new kjit::Cache(config);
      warm_up(*cache);
      WriteLockHolder holder(config, 2);  // the commit waits for it, so the end must too
      const bool got = cache->get(small_program(tag), k_sm90) != nullptr;
      switch (end) {
      case End::destroy:
        delete cache;
        ::_exit(got ? 0 : 3);
      case End::exit:
        std::exit(got ? 0 : 3);
      case End::quick_exit:
        std::quick_exit(got ? 0 : 3);
      }
    } catch (...) {
      ::_exit(4);
    }
  }
  return wait_status(child);
}

// Compiles `tag` in a forked child that cannot start any thread (a default stack larger than the
// address space), with a Cache of its own destroyed before it exits; returns the child's wait
// status: exit 0 when get() returned the binary with no store error.
int miss_without_threads(const kjit::Config& config, const std::string& tag)
{
  const pid_t child = ::fork();
  if (child == 0) {
    ::alarm(60);  // a hang ends as SIGALRM
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, std::size_t{1} << 48);  // more than the address space: no thread starts
    if (pthread_setattr_default_np(&attr) != 0) {
      ::_exit(5);
    }
    int code = 3;
    try {
      kjit::Cache cache(config);
      if (cache.get(small_program(tag), k_sm90) != nullptr) {
        code = cache.stats().store_errors == 0 ? 0 : 6;
      }
    } catch (...) {
      code = 4;
    }
    ::_exit(code);  // the Cache was destroyed above
  }
  return wait_status(child);
}

// Forks a child that destroys `cache`, its parent's (as exit() does with the default cache), and
// exits; returns the child's wait status (SIGALRM after `alarm_s` seconds if the destruction hangs).
int child_destroying(kjit::Cache* cache, unsigned alarm_s)
{
  const pid_t child = ::fork();
  if (child == 0) {
    ::alarm(alarm_s);
    delete cache;
    ::_exit(0);
  }
  return wait_status(child);
}

} // namespace

BOOST_FIXTURE_TEST_SUITE(commits, CacheFixture)

BOOST_AUTO_TEST_CASE(a_miss_returns_before_its_commit_and_its_key_stays_locked_until_the_commit)
{
  const std::string file = tmp.path() + "/locked.cu";
  write_text(file, small_program("locked").source);
  kjit::Cache cache(config);
  warm_up(cache);
  WriteLockHolder holder(config, 30);
  BOOST_TEST(cache.get(kjit::program_from_file(file), k_sm90) != nullptr);
  BOOST_TEST(holder.holding());  // was false: get() waited for the write lock (30 s)
  // Another process asking for the same key waits for the commit, then finds the entry.
  auto other = std::async(std::launch::async, [&] { return probe_cache(config.cache_dir, file, "sm_90"); });
  BOOST_TEST((other.wait_for(std::chrono::milliseconds(1500)) == std::future_status::timeout));
  holder.release();
  const std::string output = other.get();
  BOOST_TEST(output_has_line(output, "result: ok"), output);
  BOOST_TEST(output_has_line(output, "compiles: 0"), output);
  BOOST_TEST(cache.stats().store_errors == 0u);
}

BOOST_AUTO_TEST_CASE(a_second_get_in_the_process_waits_for_the_commit_and_hits)
{
  config.memory_limit = 0;  // no memory tier: the second get reads the store
  kjit::Cache cache(config);
  warm_up(cache);
  WriteLockHolder holder(config, 1);
  const auto first = cache.get(small_program("again"), k_sm90);
  const auto second = cache.get(small_program("again"), k_sm90);
  BOOST_TEST(second->cubin == first->cubin);
  BOOST_TEST(cache.stats().compiles == 2u);  // the warm-up's and the first get's
  BOOST_TEST(cache.stats().disk_hits == 1u);
}

BOOST_AUTO_TEST_CASE(a_cache_destroyed_right_after_a_miss_leaves_its_entry)
{
  const int status = miss_then_end(config, "destroyed", End::destroy);
  BOOST_TEST_REQUIRE(WIFEXITED(status));
  BOOST_TEST(WEXITSTATUS(status) == 0);
  found_on_disk(config, "destroyed");
}

BOOST_AUTO_TEST_CASE(a_process_exiting_right_after_a_miss_leaves_its_entry)
{
  const int status = miss_then_end(config, "exited", End::exit);
  BOOST_TEST_REQUIRE(WIFEXITED(status));
  BOOST_TEST(WEXITSTATUS(status) == 0);
  found_on_disk(config, "exited");
}

// quick_exit() runs at_quick_exit handlers only (no atexit, no destructors): a library's or the
// host's own handlers, and kjit's, which waits for the queued commits as exit() does.
BOOST_AUTO_TEST_CASE(a_process_quick_exiting_right_after_a_miss_leaves_its_entry)
{
  const int status = miss_then_end(config, "quick_exited", End::quick_exit);
  BOOST_TEST_REQUIRE(WIFEXITED(status), "status " << status);
  BOOST_TEST(WEXITSTATUS(status) == 0);
  found_on_disk(config, "quick_exited");
}

// kjit's own threads (here the store's committer and the mirror's writer, both started by a
// compile) are named kjit-* and block every signal but a fault's: the host's process-directed
// signals go to its own threads, and its handlers never run on kjit's, but for a fault of kjit's
// own (SIGSEGV…), which the host's crash handler still sees. (Before, they were unnamed and took
// the creating thread's mask: a SIGINT or a profiler's SIGPROF could be delivered to them; then
// they blocked the faults' signals too, and a fault on kjit-prepare ended the process unseen.)
BOOST_AUTO_TEST_CASE(kjit_s_own_threads_are_named_and_block_every_signal_but_a_fault_s)
{
  kjit::Cache cache(config);
  BOOST_TEST_REQUIRE(cache.get(small_program("threads"), k_sm90) != nullptr);
  cache.flush_mirror();
  std::vector<std::string> names;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::string name = read_text(task.path().string() + "/comm");
    name = name.substr(0, name.find('\n'));
    if (name.rfind("kjit-", 0) != 0) {
      continue;
    }
    names.push_back(name);
    const std::string status = read_text(task.path().string() + "/status");
    const auto at = status.find("SigBlk:\t");
    BOOST_TEST_REQUIRE(at != std::string::npos);
    const unsigned long long blocked = std::stoull(status.substr(at + 8, 16), nullptr, 16);
    for (const int signal : {SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGALRM, SIGCHLD, SIGPROF, SIGPIPE}) {
      BOOST_TEST((blocked >> (signal - 1) & 1) == 1u, name << ": signal " << signal << " not blocked");
    }
    // A fault's signal is the faulting thread's own: blocked, the kernel ends the process without
    // the host's handler (a crash reporter, Python's faulthandler).
    for (const int signal : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS}) {
      BOOST_TEST((blocked >> (signal - 1) & 1) == 0u, name << ": signal " << signal << " blocked");
    }
  }
  std::sort(names.begin(), names.end());
  BOOST_TEST(std::count(names.begin(), names.end(), "kjit-commit") == 1);
  BOOST_TEST(std::count(names.begin(), names.end(), "kjit-mirror") == 1);
}

// The nice value of the thread at `task` (/proc/PID/task/TID): its stat's 19th field, counted
// after the ')' that ends the name.
int nice_of(const std::string& task)
{
  const std::string stat = read_text(task + "/stat");
  std::istringstream fields(stat.substr(stat.rfind(')') + 2));
  std::string field;
  for (int i = 3; i <= 19 && fields >> field; ++i) {
  }
  return std::stoi(field);
}

// That this process's kjit-commit and kjit-mirror run 5 steps behind `caller` (19 at most).
void expect_committer_and_mirror_behind(int caller)
{
  int seen = 0;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::string name = read_text(task.path().string() + "/comm");
    name = name.substr(0, name.find('\n'));
    if (name == "kjit-commit" || name == "kjit-mirror") {
      ++seen;
      BOOST_TEST(nice_of(task.path().string()) == std::min(19, caller + 5), name);
    }
  }
  BOOST_TEST(seen == 2);
}

// kjit's own threads run 5 nice steps behind the thread that started them (util::own_thread): a
// miss compiled ahead has NVRTC on the caller's thread while they make its key and write its
// mirror, and on two cores NVRTC waited in the run queue for them (19–32 ms of a vendored CCCL's
// 1.1 s compile; 8 ms behind). The caller's own priority is left as it was.
BOOST_AUTO_TEST_CASE(kjit_s_own_threads_run_behind_the_thread_that_started_them)
{
  const std::string self = "/proc/self/task/" + std::to_string(::gettid());
  const int caller = nice_of(self);
  kjit::Cache cache(config);
  BOOST_TEST_REQUIRE(cache.get(small_program("behind"), k_sm90) != nullptr);
  cache.flush_mirror();
  expect_committer_and_mirror_behind(caller);
  BOOST_TEST(nice_of(self) == caller);
}

// A thread of kjit's started by another of kjit's runs where its creator does, 5 steps behind the
// host's thread: not 5 more per generation. (Before, a first miss compiled ahead started the
// mirror's writer from kjit-prepare, which writes the headers' mirror early, and the writer ran 10
// steps behind for the Cache's life; the test above starts it from the caller's thread.)
BOOST_AUTO_TEST_CASE(a_thread_of_kjits_started_by_another_runs_5_steps_behind_the_host_s_not_10)
{
  const std::string d = tmp.path() + "/behind_prepare";
  std::filesystem::create_directories(d + "/inc");
  write_text(d + "/inc/v.h", "#define V 5\n");
  const kjit::Program program =
    kjit::Program::from_source("behind_prepare.cu", "#include <v.h>\nextern \"C\" __global__ void k(int* o) { *o = V; }\n")
      .option("-I" + d + "/inc");
  const int caller = nice_of("/proc/self/task/" + std::to_string(::gettid()));
  kjit::Cache cache(config);
  BOOST_TEST_REQUIRE(cache.get(program, k_sm90) != nullptr);  // compiled ahead: kjit-prepare mirrors its header
  cache.flush_mirror();
  expect_committer_and_mirror_behind(caller);
}

// quick_exit() may be called from a signal handler (allowed when every at_quick_exit handler is
// signal-safe). One that interrupts a thread inside the commits' lock or wait gives up the drain
// for that process (as _exit() would) instead of waiting on what the interrupted thread holds:
// the drain deadlocked there (11 runs of 20 with the signal at random moments).
BOOST_AUTO_TEST_CASE(quick_exit_from_a_signal_handler_inside_a_wait_does_not_hang)
{
  const std::string dir = tmp.path() + "/store";
  kjit::store::Store::open(dir, config.store_map_size)->put(kjit::store::Table::meta, "made", "1");
  WriteLockHolder holder(dir, config.store_map_size, 30);  // the child's commit cannot land meanwhile
  const pid_t child = ::fork();
  if (child == 0) {
    ::alarm(60);
    auto store = kjit::store::Store::open(dir, config.store_map_size);
    ::signal(SIGUSR1, [](int) { std::quick_exit(0); });
    const pthread_t self = ::pthread_self();
    const auto tid = static_cast<pid_t>(::syscall(SYS_gettid));
    std::thread([self, tid] {
      // Once this thread sleeps (in kjit's wait for its commit, or for the commits' lock), the
      // signal interrupts it there.
      const std::string stat = "/proc/self/task/" + std::to_string(tid) + "/stat";
      for (;;) {
        const std::string text = read_text(stat);
        const auto close = text.rfind(')');
        if (close != std::string::npos && close + 2 < text.size() && text[close + 2] == 'S') {
          break;
        }
      }
      ::pthread_kill(self, SIGUSR1);
    }).detach();
    store->put_later({{kjit::store::Table::meta, "queued", "1"}}, [](const kjit::StoreError*) {});
    store->count(kjit::store::Table::meta);  // waits for the commit
    ::_exit(5);
  }
  const int status = wait_status(child);
  BOOST_TEST_REQUIRE(WIFEXITED(status), "status " << status);
  BOOST_TEST(WEXITSTATUS(status) == 0);
  BOOST_TEST(holder.holding());  // it ended at once, not once the write lock was free
}

// The same with the interrupted thread holding what the queued commit needs, not a lock of the
// committer's: here the registry of stores (held by an open() that waits in LMDB's open for
// another process's lock on lock.mdb), which a commit needs to follow its deleted folder. The
// drain waited for that commit for ever (so did one interrupted inside a write transaction:
// LMDB's write lock; 3 hangs in 10 runs with the signal at random moments).
BOOST_AUTO_TEST_CASE(quick_exit_from_a_signal_handler_holding_what_a_commit_needs_does_not_hang)
{
  const std::string moved = tmp.path() + "/moved";
  const std::string locked = tmp.path() + "/locked";
  std::string output;
  BOOST_TEST_REQUIRE(run("mkdir '" + locked + "'", output) == 0);
  FirstOpenHolder holder(locked);
  const pid_t child = ::fork();
  BOOST_TEST_REQUIRE(child >= 0);
  if (child == 0) {
    ::alarm(60);
    auto store = kjit::store::Store::open(moved, config.store_map_size);
    store->put(kjit::store::Table::meta, "made", "1");
    std::string ignored;
    if (run("rm -rf '" + moved + "'", ignored) != 0) {  // its next commit follows the folder
      ::_exit(6);
    }
    ::signal(SIGUSR1, [](int) { std::quick_exit(0); });
    const pthread_t self = ::pthread_self();
    const ino_t inode = holder.inode();
    std::thread([self, inode, store] {
      while (!lock_request_waits(inode)) {  // until the open below waits for the lock
        std::this_thread::yield();
      }
      store->put_later({{kjit::store::Table::meta, "queued", "1"}}, [](const kjit::StoreError*) {});
      ::pthread_kill(self, SIGUSR1);
    }).detach();
    std::ignore = kjit::store::Store::open(locked, config.store_map_size);  // holds the registry, waiting
    ::_exit(5);
  }
  const int status = wait_status(child);
  holder.release();
  BOOST_TEST_REQUIRE(WIFEXITED(status), "status " << status);
  BOOST_TEST(WEXITSTATUS(status) == 0);
}

// exit() while another thread opens a store (holding the registry of stores, here waiting in
// LMDB's open for another process's lock on lock.mdb) and a queued commit needs that registry (to
// follow its deleted folder): the exit waits for the commit, the open ends and so does the commit.
// Before, the exit's drain held the list of committers while it waited, and the open needed that
// list for its new store's committer: the three waited on each other for ever.
BOOST_AUTO_TEST_CASE(exit_while_another_thread_opens_a_store_that_a_commit_waits_for)
{
  const std::string moved = tmp.path() + "/moved";
  const std::string locked = tmp.path() + "/locked";
  kjit::store::Store::open(locked, config.store_map_size)->put(kjit::store::Table::meta, "made", "1");  // opens once let go
  FirstOpenHolder holder(locked);
  int exiting[2];
  BOOST_TEST_REQUIRE(::pipe(exiting) == 0);
  static int exiting_fd = -1;
  exiting_fd = exiting[1];
  const pid_t child = ::fork();
  BOOST_TEST_REQUIRE(child >= 0);
  if (child == 0) {
    ::alarm(30);  // a hang ends as SIGALRM
    auto store = kjit::store::Store::open(moved, config.store_map_size);
    store->put(kjit::store::Table::meta, "made", "1");
    std::string ignored;
    if (run("rm -rf '" + moved + "'", ignored) != 0) {  // its next commit follows the folder
      ::_exit(6);
    }
    std::thread([&] {
      try {
        std::ignore = kjit::store::Store::open(locked, config.store_map_size);
      } catch (const kjit::StoreError&) {
        ::_exit(7);
      }
    }).detach();
    while (!lock_request_waits(holder.inode())) {  // until that open waits, holding the registry
      std::this_thread::yield();
    }
    store->put_later({{kjit::store::Table::meta, "queued", "1"}}, [](const kjit::StoreError*) {});
    std::atexit([] { std::ignore = ::write(exiting_fd, "e", 1); });  // runs before kjit's drain
    std::exit(0);
  }
  ::close(exiting[1]);
  char byte = 0;
  BOOST_TEST_REQUIRE(::read(exiting[0], &byte, 1) == 1);
  ::close(exiting[0]);
  // Once the child's main thread sleeps, it is in the drain, waiting for the commit.
  const std::string stat = "/proc/" + std::to_string(child) + "/stat";
  for (;;) {
    const std::string text = read_text(stat);
    const auto close = text.rfind(')');
    if (close == std::string::npos || close + 2 >= text.size() || text[close + 2] != 'R') {
      break;
    }
  }
  holder.release();
  const int status = wait_status(child);
  BOOST_TEST_REQUIRE(WIFEXITED(status), "status " << status_text(status));
  BOOST_TEST(WEXITSTATUS(status) == 0);
  BOOST_TEST(kjit::store::Store::open(moved, config.store_map_size)->get(kjit::store::Table::meta, "queued").value_or("") == "1");
}

// A child forked while the parent's commit waits exits at once (its exit handler skips the
// parent's queue) and the parent's entry still reaches the disk.
BOOST_AUTO_TEST_CASE(a_child_forked_during_a_commit_neither_waits_for_it_nor_loses_it)
{
  auto* cache = new kjit::Cache(config);
  warm_up(*cache);
  WriteLockHolder holder(config, 3);
  BOOST_TEST(cache->get(small_program("parent_pending"), k_sm90) != nullptr);
  const pid_t child = ::fork();
  if (child == 0) {
    ::alarm(40);
    bool got = false;
    try {
      std::ignore = cache->stats();
      try { std::ignore = cache->get(small_program("child_prog"), k_sm90); } catch (const kjit::StoreError&) {}
      kjit::Cache own(config);
      got = own.get(small_program("child_prog"), k_sm90) != nullptr &&
            own.get(small_program("parent_pending"), k_sm90) != nullptr;
    } catch (...) {
      ::_exit(4);
    }
    std::exit(got ? 0 : 3);
  }
  const int status = wait_status(child);
  BOOST_TEST_REQUIRE(WIFEXITED(status), "status " << status);
  BOOST_TEST(WEXITSTATUS(status) == 0);
  delete cache;
  found_on_disk(config, "parent_pending");
}

// A forked child that destroys a Cache its parent made (as a static's destructor at exit() does
// with the default cache) exits: the parent's store and mirror threads, idle on their condition
// variables at fork(), are not the child's to wait for. Before, the child hung for ever in
// pthread_cond_destroy (glibc still counted the parent's waiting threads in the child's copy).
BOOST_AUTO_TEST_CASE(a_forked_child_destroying_its_parents_cache_exits)
{
  config.mirror = true;
  auto* cache = new kjit::Cache(config);
  BOOST_TEST(cache->get(small_program("before_fork"), k_sm90) != nullptr);  // starts both threads
  cache->flush_mirror();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // both threads back to waiting
  const int status = child_destroying(cache, 20);
  BOOST_TEST_REQUIRE(WIFEXITED(status), "status " << status);
  BOOST_TEST(WEXITSTATUS(status) == 0);
  BOOST_TEST(cache->get(small_program("after_fork"), k_sm90) != nullptr);  // the parent's threads still work
  delete cache;
  found_on_disk(config, "after_fork");
}

// The same while another thread of the parent is getting kernels: its hits take the Cache's
// statistics mutex, which a fork() can copy locked; the child's destruction of the Cache took it
// again (writing the last uses) and hung (3 forks in 11 here).
BOOST_AUTO_TEST_CASE(a_forked_child_destroying_its_parents_cache_while_hits_run_exits)
{
  config.mirror = false;
  auto* cache = new kjit::Cache(config);
  const kjit::PreparedProgram prepared = cache->prepare(small_program("fork_hits"), k_sm90);
  cache->get(prepared);  // compiled: in the memory tier
  std::atomic<bool> stop{false};
  std::thread hitter([&] {
    while (!stop.load(std::memory_order_relaxed)) {
      cache->get(prepared);
    }
  });
  int hung = 0;
  for (int i = 0; i < 200 && hung == 0; ++i) {
    hung += WIFSIGNALED(child_destroying(cache, 2)) ? 1 : 0;
  }
  stop = true;
  hitter.join();
  delete cache;
  BOOST_TEST(hung == 0);
}

// exit() called by a thread other than main (main still running) waits for the commit.
BOOST_AUTO_TEST_CASE(exit_from_another_thread_leaves_the_entry)
{
  const pid_t child = ::fork();
  if (child == 0) {
    ::alarm(40);
    auto* cache = new kjit::Cache(config);
    warm_up(*cache);
    WriteLockHolder holder(config, 2);
    BOOST_TEST(cache->get(small_program("thread_exit"), k_sm90) != nullptr);
    std::thread([] { std::exit(0); }).detach();
    for (;;) ::pause();
  }
  const int status = wait_status(child);
  BOOST_TEST_REQUIRE(WIFEXITED(status), "status " << status);
  BOOST_TEST(WEXITSTATUS(status) == 0);
  found_on_disk(config, "thread_exit");
}

// A process that cannot start the writer thread (at its thread limit) commits on the caller's
// thread: before, get() threw "Resource temporarily unavailable", the entry was lost and the
// Cache's destruction (and exit) waited forever for a commit never queued.
BOOST_AUTO_TEST_CASE(a_process_that_cannot_start_a_thread_still_stores_its_binary)
{
  config.mirror = false;  // the mirror's own thread is not this test's subject
  const int status = miss_without_threads(config, "threadless");
  BOOST_TEST_REQUIRE(WIFEXITED(status), "status " << status);
  BOOST_TEST(WEXITSTATUS(status) == 0);
  found_on_disk(config, "threadless");
}

// The same with the mirror on: its writer thread cannot start either, so the entry's folder is
// written on the caller's thread. Before, get() threw std::system_error ("Resource temporarily
// unavailable") out of the mirror's queue although the binary was compiled and stored.
BOOST_AUTO_TEST_CASE(a_process_that_cannot_start_a_thread_still_mirrors_its_binary)
{
  config.mirror = true;
  const int status = miss_without_threads(config, "threadless_mirror");
  BOOST_TEST_REQUIRE(WIFEXITED(status), "status " << status);
  BOOST_TEST(WEXITSTATUS(status) == 0);
  found_on_disk(config, "threadless_mirror");
  std::size_t cubins = 0;
  for (const auto& file : std::filesystem::recursive_directory_iterator(config.cache_dir + "/programs")) {
    cubins += file.path().extension() == ".cubin" ? 1 : 0;
  }
  BOOST_TEST(cubins == 1u);  // the child's entry folder (found_on_disk's hit writes none)
}

BOOST_AUTO_TEST_SUITE_END()
