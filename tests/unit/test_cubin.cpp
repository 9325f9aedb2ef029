// The in-process cubin check.
#include <boost/test/unit_test.hpp>

#include <kjit/compile.hpp>
#include <kjit/cubin.hpp>

namespace {

const std::string& sm80_cubin()
{
  static const std::string cubin =
    kjit::compile({"tiny.cu", "extern \"C\" __global__ void k(int* p) { *p = 1; }\n", {}, {}, {}},
                  kjit::Arch::parse("sm_80"))
      .cubin;
  return cubin;
}

} // namespace

BOOST_AUTO_TEST_SUITE(cubin)

BOOST_AUTO_TEST_CASE(accepts_a_real_cubin_for_its_arch_only)
{
  std::string why;
  BOOST_TEST(kjit::check_cubin(sm80_cubin(), 80, why), why);
  BOOST_TEST(!kjit::check_cubin(sm80_cubin(), 90, why));
  BOOST_TEST(why.find("sm_80") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(rejects_garbage_and_truncation)
{
  std::string why;
  BOOST_TEST(!kjit::check_cubin("", 80, why));
  BOOST_TEST(!kjit::check_cubin(std::string(200, 'x'), 80, why));
  BOOST_TEST(why == "not an ELF file");

  std::string wrong_machine = sm80_cubin();
  wrong_machine[18] = 62;  // EM_X86_64
  BOOST_TEST(!kjit::check_cubin(wrong_machine, 80, why));
  BOOST_TEST(why.find("EM_CUDA") != std::string::npos);

  BOOST_TEST(!kjit::check_cubin(sm80_cubin().substr(0, sm80_cubin().size() / 2), 80, why));
  BOOST_TEST(why.find("truncated") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
