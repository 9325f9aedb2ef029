// GPU test entry point: exits 77 (Meson's "skipped") when no driver or device is usable.
#define BOOST_TEST_MODULE kjit gpu tests
#define BOOST_TEST_NO_MAIN
#include <boost/test/unit_test.hpp>

#include <kjit/driver.hpp>

#include <cstdio>

int main(int argc, char** argv)
{
  const kjit::DriverStatus& status = kjit::driver_status();
  if (!status.available) {
    std::printf("skipped: %s\n", status.reason.c_str());
    return 77;
  }
  return boost::unit_test::unit_test_main(&init_unit_test, argc, argv);
}
