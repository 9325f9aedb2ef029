// What of loading and launching needs no GPU: argument packing, arch choice, driver error paths.
#include <boost/test/unit_test.hpp>

#include "fixture.hpp"

#include <cstdint>

BOOST_AUTO_TEST_SUITE(launch)

BOOST_AUTO_TEST_CASE(arguments_are_packed_as_the_driver_wants)
{
  struct Pair {
    double a;
    char b;
  };
  const std::uint64_t pointer = 0x7f0012345678;
  const char small = 'k';
  kjit::ArgumentPack pack(3.5f, small, pointer, Pair{2.25, 'z'}, 42);
  BOOST_TEST(pack.size() == 5u);
  void** data = pack.data();
  BOOST_TEST(*static_cast<float*>(data[0]) == 3.5f);
  BOOST_TEST(*static_cast<char*>(data[1]) == 'k');
  BOOST_TEST(*static_cast<std::uint64_t*>(data[2]) == pointer);
  BOOST_TEST(static_cast<Pair*>(data[3])->a == 2.25);
  BOOST_TEST(static_cast<Pair*>(data[3])->b == 'z');
  BOOST_TEST(*static_cast<int*>(data[4]) == 42);
  BOOST_TEST(data[5] == nullptr);
  BOOST_TEST(reinterpret_cast<std::uintptr_t>(data[2]) % alignof(std::uint64_t) == 0u);
  BOOST_TEST(reinterpret_cast<std::uintptr_t>(data[3]) % alignof(Pair) == 0u);
  // Copies: the pack does not point at the caller's variables.
  BOOST_TEST(data[1] != static_cast<const void*>(&small));
}

BOOST_AUTO_TEST_CASE(auto_arch_follows_the_injected_compute_capability)
{
  const std::vector<int> supported{75, 80, 86, 87, 88, 89, 90, 100, 103, 110, 120, 121};
  bool fallback = true;
  BOOST_TEST(kjit::arch_for_device(kjit::Arch{}, 90, supported, fallback).str() == "sm_90");
  BOOST_TEST(!fallback);
  BOOST_TEST(kjit::arch_for_device(kjit::Arch{}, 86, supported, fallback).str() == "sm_86");
  BOOST_TEST(kjit::arch_for_device(kjit::Arch::parse("sm_80"), 90, supported, fallback).str() == "sm_80");
  BOOST_TEST(kjit::arch_for_device(kjit::Arch{}, 85, supported, fallback).str() == "sm_80");
  BOOST_TEST(!fallback);

  const kjit::Arch newer = kjit::arch_for_device(kjit::Arch{}, 130, supported, fallback);
  BOOST_TEST(fallback);
  BOOST_TEST(newer.str() == "compute_121");
  BOOST_CHECK_THROW(kjit::arch_for_device(kjit::Arch{}, 61, supported, fallback), kjit::ArchError);
}

BOOST_AUTO_TEST_CASE(supported_archs_are_remembered_for_warm_starts)
{
  kjit::test::CacheFixture fixture;
  std::vector<int> first;
  {
    kjit::Cache cache(fixture.config);
    first = cache.supported_archs();
  }
  BOOST_TEST(first == kjit::supported_archs(), boost::test_tools::per_element());
  kjit::Cache warm(fixture.config);
  BOOST_TEST(warm.supported_archs() == first, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(driver_calls_without_a_driver_are_cuda_errors_that_say_why)
{
  if (kjit::driver_status().available) {
    // A driver here: the same calls succeed.
    BOOST_TEST(kjit::Context::primary(0).handle() != nullptr);
    BOOST_TEST(kjit::get_kernel(kjit::test::small_program("nodriver"), "small_nodriver").handle() != nullptr);
    return;
  }
  BOOST_TEST((kjit::driver_status().problem != kjit::DriverProblem::none));
  const std::string reason = kjit::driver_status().reason;
  try {
    kjit::Context::primary(0);
    BOOST_FAIL("expected CudaError");
  } catch (const kjit::CudaError& e) {
    BOOST_TEST(std::string(e.what()).find(reason) != std::string::npos, e.what());
  }
  BOOST_CHECK_THROW(kjit::get_kernel(kjit::test::small_program("nodriver"), "small_nodriver"), kjit::CudaError);
}

BOOST_AUTO_TEST_SUITE_END()
