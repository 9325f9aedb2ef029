// The cross-process compile lock is per key: a process that holds (or is stopped holding) one
// kernel's lock never delays the compile of another kernel, in this process or any other.
#include <boost/test/unit_test.hpp>

#include "fixture.hpp"

#include "cache/compile_lock.hpp"
#include "util/hash.hpp"
#include "util/stopwatch.hpp"

#include <csignal>
#include <cstring>
#include <sys/wait.h>
#include <unistd.h>

using namespace kjit::test;

namespace {

const kjit::Arch k_sm90 = kjit::Arch::parse("sm_90");

kjit::util::Sha256 digest_of(const kjit::PreparedProgram& prepared)
{
  return kjit::util::digest_of_bytes(raw_key(prepared));
}

// The lock byte a key takes (compile_lock.cpp: the key's first 8 bytes modulo 2^20). The tests
// below need two keys whose bytes differ, or they would wait for each other by design.
std::uint64_t slot_of(const kjit::util::Sha256& key)
{
  std::uint64_t slot = 0;
  std::memcpy(&slot, key.data(), sizeof slot);
  return slot % (std::uint64_t(1) << 20);
}

// A child that takes `key`'s lock, says so on a pipe, then stops itself (SIGSTOP) holding it.
// Returns its pid once it holds the lock.
pid_t stopped_holder(const std::string& store_dir, const kjit::util::Sha256& key)
{
  int ready[2];
  BOOST_TEST_REQUIRE(::pipe(ready) == 0);
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(ready[0]);
    kjit::cache::CompileLock lock(store_dir, key, 0.0);
    const char held = lock.held() ? 'y' : 'n';
    std::ignore = ::write(ready[1], &held, 1);
    ::raise(SIGSTOP);
    ::pause();
    ::_exit(0);
  }
  ::close(ready[1]);
  char held = 'n';
  BOOST_TEST_REQUIRE(::read(ready[0], &held, 1) == 1);
  ::close(ready[0]);
  BOOST_TEST_REQUIRE(held == 'y');
  return child;
}

void end(pid_t child)
{
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
}

} // namespace

BOOST_FIXTURE_TEST_SUITE(compile_lock, CacheFixture)

// Before (every key on lock byte 0): the second kernel waited the whole KJIT_COMPILE_LOCK_TIMEOUT
// (20 s here) for a process that never compiles it, then warned about "the same kernel".
BOOST_AUTO_TEST_CASE(a_stopped_holder_of_one_kernel_does_not_delay_another)
{
  config.compile_lock_timeout_s = 20;
  kjit::Cache cache(config);
  const kjit::PreparedProgram held = cache.prepare(small_program("held_by_a_stopped_process"), k_sm90);
  const kjit::PreparedProgram other = cache.prepare(small_program("another_kernel"), k_sm90);
  BOOST_TEST_REQUIRE(slot_of(digest_of(held)) != slot_of(digest_of(other)));
  const pid_t holder = stopped_holder(cache.store_path(), digest_of(held));
  const kjit::util::Stopwatch watch;
  const kjit::Lookup found = cache.lookup(other);
  const double seconds = watch.elapsed_ms() / 1000;
  end(holder);
  BOOST_TEST(kjit::to_string(found.source) == std::string("compiled"));
  BOOST_TEST(!found.binary->cubin.empty());
  BOOST_TEST(seconds < 15.0, "the other kernel took " << seconds << " s");
}

// Two processes each compiling a different cold kernel hold their locks at the same time.
BOOST_AUTO_TEST_CASE(two_processes_hold_the_locks_of_two_kernels_at_once)
{
  const kjit::util::Sha256 first = kjit::util::sha256("first kernel");
  const kjit::util::Sha256 second = kjit::util::sha256("second kernel");
  BOOST_TEST_REQUIRE(slot_of(first) != slot_of(second));
  kjit::Cache cache(config);  // makes the store folder
  const pid_t holder = stopped_holder(cache.store_path(), first);
  const kjit::cache::CompileLock mine(cache.store_path(), second, 5.0);
  end(holder);
  BOOST_TEST(mine.held());
  BOOST_TEST(!mine.waited());
  // The same kernel's lock does wait: the test above is not passing because nothing locks.
  const pid_t again = stopped_holder(cache.store_path(), first);
  const kjit::cache::CompileLock same(cache.store_path(), first, 0.2);
  end(again);
  BOOST_TEST(same.waited());
  BOOST_TEST(same.timed_out());
}

BOOST_AUTO_TEST_SUITE_END()
