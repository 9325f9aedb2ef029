// GPU test entry point: exits 77 (Meson's "skipped") only where this machine has no GPU (no driver
// library, or a driver that sees no device). A driver that is there but unusable (too old, entry
// points missing, cuInit failing) fails the suite with the reason.
#define BOOST_TEST_MODULE kjit gpu tests
#define BOOST_TEST_NO_MAIN
#include <boost/test/unit_test.hpp>

#include <kjit/driver.hpp>

#include <cstdio>

int main(int argc, char** argv)
{
  const kjit::DriverStatus& status = kjit::driver_status();
  if (status.problem == kjit::DriverProblem::no_driver || status.problem == kjit::DriverProblem::no_device) {
    std::printf("skipped: %s\n", status.reason.c_str());
    return 77;
  }
  if (!status.available) {
    std::printf("failed: a CUDA driver is installed but kjit cannot use it: %s\n", status.reason.c_str());
    return 1;
  }
  return boost::unit_test::unit_test_main(&init_unit_test, argc, argv);
}
