// Arch parsing and naming.
#include <boost/test/unit_test.hpp>

#include <algorithm>

#include <kjit/arch.hpp>
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

BOOST_AUTO_TEST_CASE(supported_archs_come_from_nvrtc)
{
  const auto archs = kjit::supported_archs();
  BOOST_TEST(!archs.empty());
  BOOST_TEST((std::find(archs.begin(), archs.end(), 90) != archs.end()));
}

BOOST_AUTO_TEST_SUITE_END()
