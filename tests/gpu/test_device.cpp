// On a GPU: arch auto resolves to the device and compiles a cubin the device's SM accepts.
#include <boost/test/unit_test.hpp>

#include <kjit/kjit.hpp>

BOOST_AUTO_TEST_SUITE(device)

BOOST_AUTO_TEST_CASE(auto_arch_is_the_device)
{
  const int cc = kjit::device_compute_capability(0);
  const kjit::Binary binary =
    kjit::compile({"k.cu", "extern \"C\" __global__ void k(int* p) { *p = 7; }\n", {}, {}, {}}, kjit::Arch{});
  BOOST_TEST(binary.arch == "sm_" + std::to_string(cc));
  std::string why;
  BOOST_TEST(kjit::check_cubin(binary.cubin, cc, why), why);
}

BOOST_AUTO_TEST_SUITE_END()
