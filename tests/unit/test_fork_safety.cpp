// fork() and exit() around kjit's own threads: a fork() while exit() waits for a commit, a walk that
// forks on the store's writer thread during exit(), a child forked while another thread closes or
// opens a store, the mirror writer after a failed thread start, and a child forked while the
// toolkit's macros are read (docs/reliability.md).
#include <boost/test/unit_test.hpp>

#include "fixture.hpp"
#include "write_lock.hpp"
#include "cache/compile_lock.hpp"
#include "deps/formed_names.hpp"
#include "rtc/toolkit.hpp"
#include "mirror/writer.hpp"
#include "store/store.hpp"

#include <kjit/compile.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <pthread.h>
#include <sys/wait.h>
#include <thread>
#include <tuple>
#include <unistd.h>

using namespace kjit::test;

namespace {

const kjit::Arch k_sm90 = kjit::Arch::parse("sm_90");

} // namespace

BOOST_FIXTURE_TEST_SUITE(fork_safety, CacheFixture)

// fork() from another thread while exit() drains a commit. The compile lock's prepare handler
// (registered after the committers' one) takes g_held_mutex, then the committers' handler waits for
// live_mutex, held by drain_at_exit, which waits for the commit's `done`, whose ~CompileLock waits
// for g_held_mutex: deadlock. (With a prepare handler that locked the registry of committers.)
BOOST_AUTO_TEST_CASE(fork_from_another_thread_during_the_exit_drain)
{
  int report[2];  // the grandchild's "ok"; EOF once it and every other holder are gone
  BOOST_TEST_REQUIRE(::pipe(report) == 0);
  const pid_t child = ::fork();
  if (child == 0) {
    ::alarm(20);
    ::close(report[0]);
    auto* cache = new kjit::Cache(config);
    BOOST_TEST_REQUIRE(cache->get(small_program("warm_up"), k_sm90) != nullptr);
    // warm_up's commit is in before the write lock is taken: queued behind the lock, it made the
    // lookup below wait for it (a store's reads wait for its queued commits) as long as the lock
    // was held, and on a loaded machine the process then exited before the thread forked (no
    // grandchild said "ok"; 2 of 3 runs beside another test binary, with a 5 s hold).
    BOOST_TEST_REQUIRE(cache->stats().compiles >= 1u);  // (stats() waits for the commits)
    // The commit waits until the thread below forked: the drain is still on then.
    auto* holder = new WriteLockHolder(config.cache_dir + "/store", config.store_map_size, 30);
    BOOST_TEST_REQUIRE(cache->get(small_program("during_exit"), k_sm90) != nullptr);
    const std::string own = tmp.path() + "/grandchild";
    std::thread([own, out = report[1], holder] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));  // exit() is draining by now
      const pid_t grandchild = ::fork();  // e.g. an application thread starting a subprocess
      if (grandchild == 0) {
        // A store of its own registers a committer: with the parent's registry of committers
        // copied (not util::ForkFresh), locked by the drain at fork(), that waited for ever.
        ::alarm(10);
        kjit::store::Store::open(own, std::size_t(64) << 20)->put({{kjit::store::Table::meta, "k", "v"}});
        std::ignore = ::write(out, "ok", 2);
        ::_exit(0);
      }
      holder->release();  // forked: the drain's commit takes the write lock now
      ::waitpid(grandchild, nullptr, 0);
    }).detach();
    std::exit(0);
  }
  ::close(report[1]);
  const int status = wait_status(child);
  BOOST_TEST_REQUIRE(WIFEXITED(status), "status " << status << (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM ? " (SIGALRM: hung)" : ""));
  BOOST_TEST(WEXITSTATUS(status) == 0);
  std::string reported;
  char buffer[16];
  for (ssize_t got; (got = ::read(report[0], buffer, sizeof buffer)) > 0;) {
    reported.append(buffer, static_cast<std::size_t>(got));
  }
  ::close(report[0]);
  BOOST_TEST(reported == "ok");  // the grandchild opened and wrote its own store
}

// no application fork at all. A write not preceded by walk_ahead() (a bundle or remote hit
// promoted by persist(), tiers.cpp:113) walks on the committer thread: check() -> run_isolated()
// -> fork(), whose committers' prepare handler waits for live_mutex. If exit() is already in
// drain_at_exit (holding live_mutex, waiting for that very commit): deadlock. The sleep in a
// prepare handler of our own only widens the window (a thread descheduled before fork()).
BOOST_AUTO_TEST_CASE(exit_right_after_a_write_that_walks_on_the_committer_thread)
{
  const int rounds = 6;
  int hung = 0;
  for (int i = 0; i < rounds; ++i) {
    const std::string dir = tmp.path() + "/s" + std::to_string(i);
    {
      auto first = kjit::store::Store::open(dir, config.store_map_size);
      first->put({{kjit::store::Table::meta, "seed", "x"}});
    }
    {
      // Another process writes it after the stamp: the next process must walk it before writing.
      const pid_t writer = ::fork();
      if (writer == 0) {
        auto other = kjit::store::Store::open(dir, config.store_map_size);
        other->put({{kjit::store::Table::meta, "other", "y"}});
        ::_exit(0);  // no stamp
      }
      wait_status(writer);
    }
    const pid_t child = ::fork();
    if (child == 0) {
      ::alarm(10);
      if (i % 2 == 1) {
        ::pthread_atfork([] { std::this_thread::sleep_for(std::chrono::milliseconds(200)); }, nullptr, nullptr);
      }
      auto store = kjit::store::Store::open(dir, config.store_map_size);
      store->put_later({{kjit::store::Table::meta, "k", "v"}}, [](const kjit::StoreError*) {});
      std::exit(0);
    }
    const int status = wait_status(child);
    const bool this_hung = WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM;
    BOOST_TEST_MESSAGE("round " << i << (i % 2 == 1 ? " (widened)" : "") << ": " << (this_hung ? "HUNG" : "exited"));
    hung += this_hung ? 1 : 0;
  }
  BOOST_TEST(hung == 0);
}

// the Store registry at fork(): thread A drops a Store's last reference (its deleter holds
// g_registry_mutex while ~Store drains a commit), thread B opens the same store (waits on
// g_registry_closed). A child forked then hangs when it destroys a Cache of its parent (the
// deleter locks the copied, locked g_registry_mutex) or merely calls exit() (the static
// g_registry_closed is destroyed with B counted as a waiter).
BOOST_AUTO_TEST_CASE(a_child_forked_while_a_store_closes)
{
  for (int variant = 0; variant < 3; ++variant) {
    kjit::test::TempDir other_dir;
    kjit::Config other = config;
    other.cache_dir = other_dir.path() + "/cache";
    auto* other_cache = new kjit::Cache(other);
    BOOST_TEST_REQUIRE(other_cache->get(small_program("o"), k_sm90) != nullptr);
    const std::string dir = tmp.path() + "/reg" + std::to_string(variant);
    {
      auto s = kjit::store::Store::open(dir, config.store_map_size);
      s->put({{kjit::store::Table::meta, "seed", "x"}});
    }
    auto store = kjit::store::Store::open(dir, config.store_map_size);
    WriteLockHolder holder(dir, config.store_map_size, 2);
    store->put_later({{kjit::store::Table::meta, "k", "v"}}, [](const kjit::StoreError*) {});
    std::thread closer([&] { store.reset(); });  // ~Store waits for the commit: 2 s
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    std::thread opener([&] { std::ignore = kjit::store::Store::open(dir, config.store_map_size); });
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    const pid_t child = ::fork();
    if (child == 0) {
      ::alarm(5);
      if (variant == 0) {
        delete other_cache;
        ::_exit(0);
      }
      if (variant == 2) {  // a Cache of the child's own (as the StoreError for a parent's store advises)
        kjit::test::TempDir own_dir;
        kjit::Config own = config;
        own.cache_dir = own_dir.path() + "/cache";
        kjit::Cache cache(own);
        ::_exit(cache.writable() ? 0 : 3);
      }
      std::exit(0);
    }
    const int status = wait_status(child);
    closer.join();
    opener.join();
    delete other_cache;
    BOOST_TEST((WIFEXITED(status) && WEXITSTATUS(status) == 0), "variant " << variant << " status " << status
                                             << (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM ? " (SIGALRM: hung)" : ""));
  }
}

// the writer's caller-thread fallback and a thread started later run two jobs at once, and
// m_busy (one flag) then says "idle" while the thread's job is still under way: flush() returns
// before every queued job is done. (Thread creation fails for the first write, EAGAIN, and works
// for the next: a process at its thread limit a moment ago.)
BOOST_AUTO_TEST_CASE(flush_returns_while_a_job_is_under_way_after_a_failed_thread_start)
{
  const pid_t child = ::fork();
  if (child == 0) {
    ::alarm(20);
    std::mutex m;
    std::condition_variable cv;
    int stage = 0;  // 1: main's job is in stored(); 2: the thread's job is in stored(); 3: release it
    std::atomic<bool> thread_job_done{false};
    const std::string k1(64, '1');
    const std::string k2(64, '2');
    kjit::mirror::WriterSource source;
    source.stored = [&](const std::string& hex) {
      std::unique_lock lock(m);
      if (hex == k1) {
        stage = 1;
        cv.notify_all();
        cv.wait_for(lock, std::chrono::seconds(2), [&] { return stage >= 2; });  // (with a fix, k2 runs after k1 here)
      } else {
        stage = 2;
        cv.notify_all();
        cv.wait_for(lock, std::chrono::seconds(2), [&] { return stage >= 3; });
        thread_job_done = true;
      }
      return true;
    };
    source.has_blob = [](const std::string&) { return true; };
    source.rows = [] { return std::vector<kjit::mirror::IndexRow>{}; };
    std::filesystem::create_directories(tmp.path() + "/mirror/programs");
    kjit::mirror::Writer writer(tmp.path() + "/mirror", source);
    kjit::store::Entry entry;
    entry.program_name = "p";
    entry.binary.arch = "sm_90";
    std::thread other([&] {  // started before the limit
      {
        std::unique_lock lock(m);
        cv.wait(lock, [&] { return stage >= 1; });
      }
      pthread_attr_t normal;
      pthread_attr_init(&normal);
      pthread_attr_setstacksize(&normal, std::size_t{8} << 20);
      pthread_setattr_default_np(&normal);  // threads can start again
      writer.write(k2, entry);              // starts the writer's thread, which takes k2
    });
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, std::size_t{1} << 48);
    if (pthread_setattr_default_np(&attr) != 0) {
      ::_exit(5);
    }
    writer.write(k1, entry);  // no thread: k1 runs here, and waits in stored() until k2 runs
    other.join();
    writer.flush();  // "Returns once every queued job is done"
    const bool early = !thread_job_done.load();
    {
      std::lock_guard lock(m);
      stage = 3;
    }
    cv.notify_all();
    ::_exit(early ? 7 : 0);  // 7: flush() returned while k2's job was still under way
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  BOOST_TEST_REQUIRE(WIFEXITED(status), "status " << status);
  BOOST_TEST(WEXITSTATUS(status) == 0, "exit " << WEXITSTATUS(status) << " (7: flush() returned early)");
}

// Guards the compile lock's fork() child handler (compile_lock.hpp: "a fork()ed child closes its
// copy of the descriptor at once"): a process killed while it compiles, whose child lives on (a
// subprocess it started), leaves the key unlocked. The OFD lock belongs to the open file
// description, which the child's copy kept open: without the handler every other process waited
// KJIT_COMPILE_LOCK_TIMEOUT for a compile that would never end (a semantic mutant: docs/testing.md).
BOOST_AUTO_TEST_CASE(a_compiler_killed_while_its_child_lives_leaves_the_key_unlocked)
{
  const kjit::util::Sha256 key = kjit::util::sha256("locked key");
  int ready[2];
  int release[2];
  BOOST_TEST_REQUIRE(::pipe(ready) == 0);
  BOOST_TEST_REQUIRE(::pipe(release) == 0);
  const pid_t holder = ::fork();
  BOOST_TEST_REQUIRE(holder >= 0);
  if (holder == 0) {
    ::alarm(20);
    const kjit::cache::CompileLock lock(tmp.path(), key, 0.0);
    if (!lock.held()) {
      ::_exit(3);
    }
    if (::fork() == 0) {  // outlives its parent, until the test closes `release`
      // Says "ready" itself: fork() returns here after the child handlers ran, so the test never
      // kills the holder before this copy of the descriptor had its chance to be closed.
      ::close(release[1]);
      std::ignore = ::write(ready[1], "h", 1);
      char byte = 0;
      std::ignore = ::read(release[0], &byte, 1);
      ::_exit(0);
    }
    for (;;) {
      ::pause();  // killed while "compiling"
    }
  }
  ::close(release[0]);
  ::close(ready[1]);
  char byte = 0;
  BOOST_TEST_REQUIRE(::read(ready[0], &byte, 1) == 1);
  ::close(ready[0]);
  ::kill(holder, SIGKILL);
  ::waitpid(holder, nullptr, 0);
  const kjit::cache::CompileLock mine(tmp.path(), key, 0.0);  // no wait: held now or never
  BOOST_TEST(mine.held());
  BOOST_TEST(!mine.timed_out());
  ::close(release[1]);  // the child exits
}

// A forked child's check() or quarantine() of its parent's store (found damaged) neither acts on
// it nor waits on the parent's guard (a parent's thread was reading at fork()): the calls of a
// parent's Store are refused in a child. Before, the child's check moved the store aside and opened
// one of its own, and waited for ever for the copy of the guard a parent's reader held.
BOOST_AUTO_TEST_CASE(a_forked_childs_check_of_its_parents_store_neither_repairs_nor_hangs)
{
  const std::string dir = tmp.path() + "/parents";
  auto store = kjit::store::Store::open(dir, config.store_map_size);
  store->put(kjit::store::Table::meta, "row", std::string(std::size_t(64) << 10, 'x'));
  std::atomic<bool> reading{false};
  std::atomic<bool> release{false};
  std::thread reader([&] {
    store->visit(kjit::store::Table::meta, "row", [&](std::string_view) {
      reading = true;
      while (!release) {
        std::this_thread::yield();
      }
    });
  });
  while (!reading) {
    std::this_thread::yield();
  }
  const std::string data = dir + "/data.mdb";
  const std::string kept = read_text(data);
  BOOST_TEST_REQUIRE(::truncate(data.c_str(), 2 * 4096) == 0);  // its walk fails
  const pid_t child = ::fork();
  BOOST_TEST_REQUIRE(child >= 0);
  if (child == 0) {
    ::alarm(30);  // a hang ends as SIGALRM
    const bool checked = store->check(true).ok;
    const bool quarantined = store->quarantine(std::string(32, 'k'), "bytes", "test");
    ::_exit(checked || quarantined ? 3 : 0);
  }
  const int status = wait_status(child);
  const bool moved = !exists(data) || std::filesystem::file_size(data) != 2 * 4096;
  write_text(data, kept);  // whole again before the parent reads on
  release = true;
  reader.join();
  BOOST_TEST((WIFEXITED(status) && WEXITSTATUS(status) == 0), "status " << status_text(status));
  BOOST_TEST(!moved);
  BOOST_TEST(store->replacements() == 0u);
}

// A child forked while another thread reads a toolkit's macros (≈ 0.1 s under the memo's lock):
// the child's own read neither waits for a lock no thread of its holds nor finds a half-made memo.
BOOST_AUTO_TEST_CASE(a_child_forked_while_toolkit_macros_are_read_reads_its_own)
{
  const std::vector<std::string> toolkit = kjit::rtc::find_toolkit(config).include_dirs;
  BOOST_TEST_REQUIRE(!toolkit.empty());
  const std::string other = tmp.path() + "/other-toolkit";
  put(other + "/h.h", "#define OWN_MACRO 1\n");
  std::atomic<bool> started{false};
  std::thread reader([&] {
    started = true;
    // (a folder list no test read before: a read, not the memo's answer)
    std::vector<std::string> dirs = toolkit;
    dirs.push_back(tmp.path() + "/none");
    std::ignore = kjit::deps::toolkit_macros(dirs);
  });
  while (!started) {
    std::this_thread::yield();
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const pid_t child = ::fork();
  BOOST_TEST_REQUIRE(child >= 0);
  if (child == 0) {
    ::alarm(20);  // a hang ends as SIGALRM
    const kjit::deps::ScanMacros& macros = kjit::deps::toolkit_macros({other});
    ::_exit(macros.values.count("OWN_MACRO") == 1 ? 0 : 3);
  }
  const int status = wait_status(child);
  reader.join();
  BOOST_TEST((WIFEXITED(status) && WEXITSTATUS(status) == 0), "status " << status_text(status));
}

BOOST_AUTO_TEST_SUITE_END()
