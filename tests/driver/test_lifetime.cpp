// Objects held in globals are destroyed after kjit's statics: the driver must still be there.
#include <boost/test/unit_test.hpp>

#include "../unit/fixture.hpp"

BOOST_AUTO_TEST_SUITE(lifetime)

BOOST_AUTO_TEST_CASE(globals_holding_kernels_and_buffers_exit_cleanly_cold_and_warm)
{
  kjit::test::TempDir tmp;
  const std::string log = tmp.path() + "/calls.log";
  const std::string command = "KJIT_CACHE_DIR='" + tmp.path() + "/cache' KJIT_FAKE_CUDA_LOG='" + log + "' '" +
                              kjit::test::helper("KJIT_TEST_DRIVER_CHILD") + "' global 2>&1";
  for (const char* run : {"cold", "warm"}) {
    std::string output;
    const int status = kjit::test::run(command, output);
    BOOST_TEST(status == 0, run << ": " << output);
    BOOST_TEST(output.find("launched") != std::string::npos, run << ": " << output);
    BOOST_TEST(output.find("after the library was unloaded") == std::string::npos, run << ": " << output);
  }
  // The globals' destructors reached the driver: the buffer freed, the module unloaded.
  const std::string calls = kjit::test::read_text(log);
  BOOST_TEST(calls.find("VIOLATION") == std::string::npos, calls);
  const auto count = [&](const std::string& line) {
    std::size_t n = 0;
    for (std::size_t at = calls.find(line); at != std::string::npos; at = calls.find(line, at + 1)) {
      ++n;
    }
    return n;
  };
  BOOST_TEST(count("\ncuMemFree\n") == 2u, calls);
  BOOST_TEST(count("\ncuModuleUnload M1 ctx=P0\n") == 2u, calls);
}

BOOST_AUTO_TEST_SUITE_END()
