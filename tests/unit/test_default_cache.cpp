// The process-wide cache under concurrent use: kjit::get in some threads while others change
// settings (each change replaces the cache). Meant to run under ThreadSanitizer and
// AddressSanitizer too (tools/test --sanitize).
#include <boost/test/unit_test.hpp>

#include "fixture.hpp"

#include <atomic>
#include <chrono>
#include <thread>

BOOST_AUTO_TEST_SUITE(default_cache)

BOOST_AUTO_TEST_CASE(get_survives_option_changes_in_other_threads)
{
  kjit::test::TempDir tmp;
  kjit::option::cache_dir(tmp.path());
  const kjit::Program program = kjit::test::small_program("flip");
  const kjit::Arch arch = kjit::Arch::parse("sm_80");
  const auto first = kjit::get(program, arch);  // compiled once; every later get is a hit
  std::atomic<bool> stop{false};
  std::atomic<long> gets{0};
  std::atomic<long> flips{0};
  std::atomic<long> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&] {
      while (!stop) {
        const auto binary = kjit::get(program, arch);
        wrong += binary->cubin != first->cubin;
        ++gets;
      }
    });
  }
  threads.emplace_back([&] {
    for (bool on = true; !stop; on = !on) {
      kjit::option::verbose(on);
      kjit::option::mirror(!on);
      ++flips;
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  stop = true;
  for (auto& thread : threads) {
    thread.join();
  }
  kjit::option::reset();
  BOOST_TEST(wrong == 0);
  BOOST_TEST(gets > 0);
  BOOST_TEST(flips > 1);
  BOOST_TEST_MESSAGE(gets << " gets during " << flips << " option changes");
}

BOOST_AUTO_TEST_CASE(a_held_default_cache_outlives_its_replacement)
{
  kjit::test::TempDir tmp;
  kjit::option::cache_dir(tmp.path() + "/a");
  const std::shared_ptr<kjit::Cache> held = kjit::shared_default_cache();
  kjit::option::cache_dir(tmp.path() + "/b");
  BOOST_TEST(kjit::shared_default_cache() != held);
  BOOST_TEST(held->config().cache_dir == tmp.path() + "/a");  // still alive and usable
  BOOST_TEST(held->get(kjit::test::small_program("held"), kjit::Arch::parse("sm_80"))->cubin.size() > 0u);
  kjit::option::reset();
}

BOOST_AUTO_TEST_SUITE_END()
