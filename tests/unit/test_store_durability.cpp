// What a commit promises: an entry stored by a process that is then killed is there for the next
// process; the "checked" stamp spares the next writer the walk, and any later change of data.mdb
// brings the walk back.
#include <boost/test/unit_test.hpp>

#include "fixture.hpp"

#include "store/store.hpp"

#include <csignal>
#include <tuple>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace kjit::test;

namespace {

const kjit::Arch k_sm90 = kjit::Arch::parse("sm_90");

// Compiles `program` in a forked child that then ends by `how` (SIGKILL, or _exit without any
// destructor); returns the child's wait status.
int compile_then_end(const kjit::Config& config, const kjit::Program& program, int how)
{
  const pid_t child = ::fork();
  if (child == 0) {
    try {
      kjit::Cache cache(config);
      const bool compiled = cache.get(program, k_sm90) != nullptr && cache.stats().compiles == 1u;
      if (how == SIGKILL) {
        ::kill(::getpid(), SIGKILL);
      }
      ::_exit(compiled ? 0 : 3);
    } catch (...) {
      ::_exit(4);
    }
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  return status;
}

// Writes one row into the store at `dir` (a fresh Store: the first write of a process) and
// returns how many walks that took.
std::uint64_t walks_of_one_write(const std::string& dir, const std::string& key)
{
  auto store = kjit::store::Store::open(dir, std::size_t(64) << 20);
  store->put(kjit::store::Table::meta, key, "value");
  return store->walks();
}

// True in the child of a fork(); the caller's process goes on otherwise.
bool child_started(pid_t pid)
{
  BOOST_TEST_REQUIRE(pid >= 0);
  return pid == 0;
}

// The next process finds `tag`'s entry on the disk and compiles nothing.
void found_on_disk(const kjit::Config& config, const std::string& tag)
{
  kjit::Cache cache(config);
  BOOST_TEST(cache.get(small_program(tag), k_sm90) != nullptr);
  BOOST_TEST(cache.stats().disk_hits == 1u);
  BOOST_TEST(cache.stats().compiles == 0u);
}

// fdatasync calls on a store's data.mdb in `trace` (strace -y output).
std::size_t syncs_of_store(const std::string& trace)
{
  const std::string data = "/store/data.mdb>";
  std::size_t synced = 0;
  const std::string traced = read_text(trace);
  for (std::size_t at = 0; (at = traced.find(data, at)) != std::string::npos; at += data.size()) {
    ++synced;
  }
  return synced;
}

} // namespace

BOOST_FIXTURE_TEST_SUITE(store_durability, CacheFixture)

BOOST_AUTO_TEST_CASE(an_entry_committed_by_a_killed_process_is_there_for_the_next)
{
  const int status = compile_then_end(config, small_program("killed"), SIGKILL);
  BOOST_TEST_REQUIRE(WIFSIGNALED(status));
  BOOST_TEST(WTERMSIG(status) == SIGKILL);
  found_on_disk(config, "killed");
}

BOOST_AUTO_TEST_CASE(after_a_writer_killed_inside_the_store_it_is_walked_once_not_twice)
{
  const std::string dir = tmp.path() + "/store";
  BOOST_TEST(walks_of_one_write(dir, "first") == 0u);  // made by that process: nothing to walk
  // Another process keeps the store open (else the next opener resets LMDB's reader table and
  // never sees the dead reader).
  int ready[2];
  BOOST_TEST_REQUIRE(::pipe(ready) == 0);
  const pid_t holder = ::fork();
  if (child_started(holder)) {
    try {
      auto store = kjit::store::Store::open(dir, std::size_t(64) << 20);
      std::ignore = ::write(ready[1], "x", 1);
      ::pause();
    } catch (...) {
    }
    ::_exit(0);
  }
  char byte = 0;
  BOOST_TEST(::read(ready[0], &byte, 1) == 1);
  // A process writes after the stamp, then dies inside a read transaction (its reader slot left).
  const pid_t killed = ::fork();
  if (child_started(killed)) {
    try {
      auto store = kjit::store::Store::open(dir, std::size_t(64) << 20);
      store->put(kjit::store::Table::meta, "second", "value");
      store->for_each(kjit::store::Table::meta, [](std::string_view, std::string_view) { ::kill(::getpid(), SIGKILL); });
    } catch (...) {
    }
    ::_exit(3);
  }
  int status = 0;
  ::waitpid(killed, &status, 0);
  BOOST_TEST(WIFSIGNALED(status));
  // The next process walks it at open (an unclean exit); that walk stands for the one before its
  // first write.
  BOOST_TEST(walks_of_one_write(dir, "third") == 1u);  // was 2
  BOOST_TEST(walks_of_one_write(dir, "fourth") == 0u);
  ::kill(holder, SIGKILL);
  ::waitpid(holder, &status, 0);
  ::close(ready[0]);
  ::close(ready[1]);
}

BOOST_AUTO_TEST_CASE(an_entry_committed_before_exit_without_destructors_is_there_for_the_next)
{
  const int status = compile_then_end(config, small_program("exited"), 0);
  BOOST_TEST_REQUIRE(WIFEXITED(status));
  BOOST_TEST(WEXITSTATUS(status) == 0);
  found_on_disk(config, "exited");
}

BOOST_AUTO_TEST_CASE(a_store_this_process_made_is_not_walked_before_its_first_write)
{
  // A fresh node's first remote hit wrote into a store it had just made after a fork and a walk.
  const std::string dir = tmp.path() + "/store";
  auto store = kjit::store::Store::open(dir, std::size_t(64) << 20);
  store->put(kjit::store::Table::meta, "first", "value");
  BOOST_TEST(store->walks() == 0u);  // was 1
  BOOST_TEST(exists(dir + "/checked"));  // stamped by its commit: the next process trusts it
  store->put(kjit::store::Table::meta, "second", "value");
  BOOST_TEST(store->walks() == 0u);
  store.reset();
  BOOST_TEST(walks_of_one_write(dir, "third") == 0u);
}

BOOST_AUTO_TEST_CASE(a_store_made_and_closed_without_a_write_has_no_stamp)
{
  // Its tables' commit is not synced (making_a_store_costs_no_fdatasync): a stamp of that state
  // could outlive a power loss that lost the pages, and spare the next opener its walk.
  const std::string dir = tmp.path() + "/store";
  kjit::store::Store::open(dir, std::size_t(64) << 20).reset();
  BOOST_TEST(exists(dir + "/data.mdb"));
  BOOST_TEST(!exists(dir + "/checked"));  // was there
  BOOST_TEST(walks_of_one_write(dir, "first") == 1u);  // another process's store: walked
}

BOOST_AUTO_TEST_CASE(a_store_made_here_and_written_by_another_before_the_first_write_is_walked)
{
  // Known sound only as it was made: a write by another program (the same byte again: only the
  // change time moves) before this process's first write brings the walk back.
  const std::string dir = tmp.path() + "/store";
  auto store = kjit::store::Store::open(dir, std::size_t(64) << 20);
  {
    const int fd = ::open((dir + "/data.mdb").c_str(), O_RDWR);
    BOOST_TEST_REQUIRE(fd >= 0);
    char byte = 0;
    BOOST_TEST(::pread(fd, &byte, 1, 0) == 1);
    ::usleep(20000);  // past the filesystem clock's tick, so the change time moves
    BOOST_TEST(::pwrite(fd, &byte, 1, 0) == 1);
    ::close(fd);
  }
  store->put(kjit::store::Table::meta, "first", "value");
  BOOST_TEST(store->walks() == 1u);
}

BOOST_AUTO_TEST_CASE(a_store_left_by_a_sound_writer_is_not_walked_again)
{
  const std::string dir = tmp.path() + "/store";
  BOOST_TEST(walks_of_one_write(dir, "first") == 0u);  // made by that process: nothing to walk
  BOOST_TEST(exists(dir + "/checked"));
  BOOST_TEST(walks_of_one_write(dir, "second") == 0u);  // was 1: every process walked
  BOOST_TEST(walks_of_one_write(dir, "third") == 0u);
  auto store = kjit::store::Store::open(dir, std::size_t(64) << 20);
  for (const char* key : {"first", "second", "third"}) {
    BOOST_TEST(store->get(kjit::store::Table::meta, key).value_or("") == "value");
  }
}

BOOST_AUTO_TEST_CASE(a_store_changed_after_its_stamp_is_walked_again)
{
  const std::string dir = tmp.path() + "/store";
  BOOST_TEST(walks_of_one_write(dir, "first") == 0u);  // made by that process: nothing to walk
  // The same byte written again: no content changes, but another program wrote to the file.
  const int fd = ::open((dir + "/data.mdb").c_str(), O_RDWR);
  BOOST_TEST_REQUIRE(fd >= 0);
  char byte = 0;
  BOOST_TEST_REQUIRE(::pread(fd, &byte, 1, 5000) == 1);
  BOOST_TEST_REQUIRE(::pwrite(fd, &byte, 1, 5000) == 1);
  ::close(fd);
  BOOST_TEST(walks_of_one_write(dir, "second") == 1u);
  BOOST_TEST(walks_of_one_write(dir, "third") == 0u);  // stamped again by the walker
}

BOOST_AUTO_TEST_CASE(a_stamp_naming_another_state_is_not_trusted)
{
  const std::string dir = tmp.path() + "/store";
  BOOST_TEST(walks_of_one_write(dir, "first") == 0u);  // made by that process: nothing to walk
  const std::string stamp = read_text(dir + "/checked");
  BOOST_TEST(walks_of_one_write(dir, "second") == 0u);
  write_text(dir + "/checked", stamp);  // an older stamp, rewritten after the file changed
  BOOST_TEST(walks_of_one_write(dir, "third") == 1u);
  write_text(dir + "/checked", "kjit-checked 1 garbage\n");
  BOOST_TEST(walks_of_one_write(dir, "fourth") == 1u);
}

// Guards the commit's durability (docs/ARCHITECTURE.md: write transaction + fdatasync): a
// process that compiles a kernel has LMDB write data.mdb's pages to the disk (fdatasync), not only
// to the page cache, which a killed process leaves intact but a power loss does not. MDB_NOSYNC
// kept every other test passing (a semantic mutant: docs/testing.md). Traced with strace, where it
// can trace.
BOOST_AUTO_TEST_CASE(a_commit_reaches_the_disk_by_fdatasync)
{
  std::string output;
  if (run("strace -o /dev/null true 2>&1", output) != 0) {
    BOOST_TEST_MESSAGE("no working strace: not checked");
    return;
  }
  const std::string file = tmp.path() + "/synced.cu";
  write_text(file, small_program("synced").source);
  const std::string trace = tmp.path() + "/trace";
  output = probe_cache(config.cache_dir, file, "sm_90", "strace -f -y -qq -o '" + trace + "' -e trace=fdatasync,fsync");
  BOOST_TEST_REQUIRE(output_has_line(output, "compiles: 1"), output);
  BOOST_TEST(syncs_of_store(trace) > 0u, read_text(trace));
}

BOOST_AUTO_TEST_CASE(making_a_store_costs_no_fdatasync)
{
  // A fresh node's first hit made its store with a commit of the empty tables, synced: one of the
  // three fdatasyncs it waited for. The same compile into a folder whose store was made before
  // (by another process: its tables only) must sync as often as into a new folder.
  std::string output;
  if (run("strace -o /dev/null true 2>&1", output) != 0) {
    BOOST_TEST_MESSAGE("no working strace: not checked");
    return;
  }
  const std::string file = tmp.path() + "/fresh.cu";
  write_text(file, small_program("fresh").source);
  const auto syncs = [&](const std::string& dir) {
    const std::string trace = tmp.path() + "/trace";
    const std::string out = probe_cache(dir, file, "sm_90", "strace -f -y -qq -o '" + trace + "' -e trace=fdatasync,fsync");
    BOOST_TEST_REQUIRE(output_has_line(out, "compiles: 1"), out);
    return syncs_of_store(trace);
  };
  const std::size_t into_new = syncs(tmp.path() + "/new");
  const std::string made = tmp.path() + "/made";
  const pid_t maker = ::fork();
  if (child_started(maker)) {
    try {
      kjit::store::Store::open(made + "/store", std::size_t(64) << 20);
    } catch (...) {
      ::_exit(3);
    }
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(maker, &status, 0);
  BOOST_TEST_REQUIRE((WIFEXITED(status) && WEXITSTATUS(status) == 0));
  const std::size_t into_made = syncs(made);
  BOOST_TEST(into_made > 0u);
  BOOST_TEST(into_new == into_made);  // was into_made + 1
}

// A host that ignores SIGCHLD (a daemon's habit) has its children reaped by the kernel: waitpid()
// then fails with ECHILD. The walk in a child process read that as a failed check and moved the
// sound store aside (every entry lost, at every such process's first write).
BOOST_AUTO_TEST_CASE(a_host_ignoring_sigchld_keeps_its_sound_store)
{
  const std::string dir = tmp.path() + "/store";
  kjit::store::Store::open(dir, std::size_t(64) << 20)->put(kjit::store::Table::meta, "kept", "1");
  const pid_t child = ::fork();
  if (child_started(child)) {
    ::alarm(60);
    ::signal(SIGCHLD, SIG_IGN);
    auto store = kjit::store::Store::open(dir, std::size_t(64) << 20);
    const kjit::store::CheckReport report = store->check(true);
    const bool kept = store->replacements() == 0 && store->get(kjit::store::Table::meta, "kept").value_or("") == "1";
    ::_exit(report.ok ? (kept ? 0 : 2) : 1);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  BOOST_TEST_REQUIRE(WIFEXITED(status), "status " << status);
  BOOST_TEST(WEXITSTATUS(status) == 0);
}

BOOST_AUTO_TEST_SUITE_END()
