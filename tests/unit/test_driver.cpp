// The lazily loaded driver, and what the built binaries link against.
#include <boost/test/unit_test.hpp>

#include <kjit/cache.hpp>
#include <kjit/compile.hpp>
#include <kjit/driver.hpp>
#include <kjit/error.hpp>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <sstream>

BOOST_AUTO_TEST_SUITE(driver)

BOOST_AUTO_TEST_CASE(status_says_why_when_unavailable)
{
  const kjit::DriverStatus& status = kjit::driver_status();
  if (status.available) {
    BOOST_TEST(status.device_count > 0);
    BOOST_TEST(kjit::device_compute_capability(0) >= 50);
  } else {
    BOOST_TEST(!status.reason.empty());
    BOOST_CHECK_THROW(kjit::device_compute_capability(0), kjit::CudaError);
    // `auto` needs the device: compile() and Cache::prepare() say so with the same CudaError.
    const kjit::Program program{"auto.cu", "__global__ void k() {}", {}, {}, {}};
    BOOST_CHECK_THROW(kjit::compile(program, kjit::Arch{}), kjit::CudaError);
    kjit::Config config;
    config.disable_cache = true;
    kjit::Cache cache(config);
    BOOST_CHECK_THROW(cache.prepare(program), kjit::CudaError);
  }
}

BOOST_AUTO_TEST_CASE(library_and_cli_do_not_link_cuda_nvrtc_or_nvjitlink)
{
  const char* binaries = std::getenv("KJIT_TEST_BINARIES");
  BOOST_TEST_REQUIRE(binaries != nullptr);
  std::istringstream list(binaries);
  std::string path;
  int checked = 0;
  while (list >> path) {
    FILE* pipe = ::popen(("readelf -d '" + path + "'").c_str(), "r");
    BOOST_TEST_REQUIRE(pipe != nullptr);
    std::string dynamic;
    std::array<char, 4096> buffer{};
    while (std::fgets(buffer.data(), buffer.size(), pipe) != nullptr) {
      dynamic += buffer.data();
    }
    BOOST_TEST(::pclose(pipe) == 0, "readelf -d " << path);
    BOOST_TEST(dynamic.find("(NEEDED)") != std::string::npos, path);
    for (const char* forbidden : {"libcuda.so", "libnvrtc", "libnvJitLink", "libcudart"}) {
      BOOST_TEST(dynamic.find(forbidden) == std::string::npos, path << " needs " << forbidden);
    }
    ++checked;
  }
  BOOST_TEST(checked >= 1);
}

BOOST_AUTO_TEST_SUITE_END()
