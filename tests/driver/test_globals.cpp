// Module variables against the fake driver: by name, lowered name and name expression; typed reads
// and writes; sizes checked before the driver; cubin and PTX modules alike.
#include <boost/test/unit_test.hpp>

#include "../unit/fixture.hpp"
#include "fake_driver.hpp"

#include <array>

using kjit::test::fake;

namespace {

const char* const k_variables = R"(
__device__ int answer = 42;
__constant__ float coeffs[4] = {1.0f, 2.0f, 3.0f, 4.0f};
template <typename T> __device__ T scaled = T(7);
template __device__ int scaled<int>;
__device__ long long counter;
extern "C" __global__ void use(int* out) { out[threadIdx.x] = answer + (int)coeffs[threadIdx.x & 3] + scaled<int> + counter; }
)";

struct Globals : kjit::test::DriverFixture {

  kjit::Module load(const kjit::Context& context)
  {
    kjit::Cache cache(kjit::current_config());
    const kjit::Program program{"variables.cu", k_variables, {}, {}, {"&scaled<int>"}};
    const auto prepared = cache.prepare(program, kjit::Arch::parse("sm_90"));
    return context.load(prepared, *cache.get(prepared));
  }

  void check(const kjit::Module& module)
  {
    BOOST_TEST(module.get_global<int>("answer") == 42);
    module.set_global("answer", 7);
    BOOST_TEST(module.get_global<int>("answer") == 7);
    const auto coeffs = module.get_global<std::array<float, 4>>("coeffs");
    BOOST_TEST(coeffs[0] == 1.0f);
    BOOST_TEST(coeffs[3] == 4.0f);
    BOOST_TEST(module.global("coeffs").size == 16u);
    BOOST_TEST(module.global("coeffs").pointer != 0u);
    // A variable template's instance, by its name expression with or without '&'.
    BOOST_TEST(module.get_global<int>("&scaled<int>") == 7);
    BOOST_TEST(module.get_global<int>("scaled<int>") == 7);
    BOOST_TEST(module.global("scaled<int>").pointer == module.global("&scaled<int>").pointer);
    BOOST_TEST(module.get_global<long long>("counter") == 0);
    module.set_global("counter", 1234567890123LL);
    BOOST_TEST(module.get_global<long long>("counter") == 1234567890123LL);
    // Another size: refused before any copy.
    const int copies = fake().count("cuMemcpy");
    try {
      module.get_global<double>("answer");
      BOOST_ERROR("expected GlobalError");
    } catch (const kjit::GlobalError& e) {
      BOOST_TEST(e.variable() == "answer");
      BOOST_TEST(e.expected() == 4u);
      BOOST_TEST(e.given() == 8u);
      BOOST_TEST(std::string(e.what()).find("variable 'answer' of variables.cu on device 0") != std::string::npos,
                 e.what());
    }
    BOOST_CHECK_THROW(module.set_global("coeffs", 1.0f), kjit::GlobalError);
    BOOST_TEST(fake().count("cuMemcpy") == copies);
    try {
      module.global("missing");
      BOOST_ERROR("expected CudaError");
    } catch (const kjit::CudaError& e) {
      BOOST_TEST(e.result() == 500);
      BOOST_TEST(std::string(e.what()).find("variable 'missing' of variables.cu") != std::string::npos, e.what());
    }
  }
};

} // namespace

BOOST_FIXTURE_TEST_SUITE(globals, Globals)

BOOST_AUTO_TEST_CASE(variables_of_a_cubin_module_are_read_and_written)
{
  {
    const kjit::Context context = kjit::Context::primary(0);
    const kjit::Module module = load(context);
    BOOST_TEST(module.image_kind() == "cubin");
    check(module);
    BOOST_TEST(fake().count("cuModuleGetGlobal _Z6scaledIiE") >= 1, fake().log());
  }
  check_clean();
}

BOOST_AUTO_TEST_CASE(variables_of_a_ptx_module_are_read_and_written)
{
  {
    kjit::option::force_ptx(true);
    const kjit::Context context = kjit::Context::primary(0);
    const kjit::Module module = load(context);
    BOOST_TEST(module.loaded_from_ptx());
    check(module);
  }
  check_clean();
}

BOOST_AUTO_TEST_SUITE_END()
