// Arch parsing and naming.
#include <boost/test/unit_test.hpp>

#include <algorithm>

#include "fixture.hpp"

#include <kjit/arch.hpp>
#include <kjit/cache.hpp>
#include <kjit/error.hpp>

BOOST_AUTO_TEST_SUITE(arch)

BOOST_AUTO_TEST_CASE(parses_real_virtual_and_auto)
{
  const auto sm90 = kjit::Arch::parse("sm_90");
  BOOST_TEST(sm90.number() == 90);
  BOOST_TEST(!sm90.is_virtual());
  BOOST_TEST(sm90.real_name() == "sm_90");
  BOOST_TEST(sm90.virtual_name() == "compute_90");

  const auto sm90a = kjit::Arch::parse("sm_90a");
  BOOST_TEST(sm90a.variant() == 'a');
  BOOST_TEST(sm90a.str() == "sm_90a");
  BOOST_TEST(sm90a.virtual_name() == "compute_90a");

  const auto compute = kjit::Arch::parse("compute_120");
  BOOST_TEST(compute.is_virtual());
  BOOST_TEST(compute.number() == 120);
  BOOST_TEST(compute.str() == "compute_120");

  BOOST_TEST(kjit::Arch::parse("auto").is_auto());
  BOOST_TEST(kjit::Arch::of_compute_capability(8, 6).str() == "sm_86");
  BOOST_TEST((kjit::Arch::parse("sm_90") != kjit::Arch::parse("sm_90a")));
}

BOOST_AUTO_TEST_CASE(rejects_bad_syntax)
{
  for (const char* bad : {"", "sm90", "sm_", "sm_9", "sm_9000", "sm_90b", "gfx90a", "compute_", "sm_090", "AUTO"}) {
    BOOST_CHECK_THROW(kjit::Arch::parse(bad), kjit::ArchError);
  }
}

// NVRTC takes sm_XYa from 9.0 and sm_XYf from 10.0 on; it failed on sm_80a like a compile error
// ("invalid or no value specified with --nv_arch flag"), which the cache remembered as one.
BOOST_FIXTURE_TEST_CASE(an_arch_variant_nvrtc_lacks_is_an_arch_error_the_cache_does_not_keep, kjit::test::CacheFixture)
{
  kjit::Cache cache(config);
  for (const char* arch : {"sm_80a", "compute_89a", "sm_90f", "compute_75f"}) {
    try {
      cache.get(kjit::test::small_program("variant"), kjit::Arch::parse(arch));
      BOOST_ERROR(arch << ": expected ArchError");
    } catch (const kjit::ArchError& e) {
      BOOST_TEST(std::string(e.what()).find(arch) != std::string::npos, e.what());
    }
  }
  BOOST_TEST(cache.entries().empty());
  for (const char* arch : {"sm_90a", "compute_90a", "sm_100f", "compute_120f"}) {
    BOOST_TEST(cache.get(kjit::test::small_program("variant"), kjit::Arch::parse(arch)) != nullptr, arch);
  }
}

BOOST_AUTO_TEST_CASE(supported_archs_come_from_nvrtc)
{
  const auto archs = kjit::supported_archs();
  BOOST_TEST(!archs.empty());
  BOOST_TEST((std::find(archs.begin(), archs.end(), 90) != archs.end()));
}

BOOST_AUTO_TEST_SUITE_END()
