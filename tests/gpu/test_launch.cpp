// On a GPU: load, launch and check results; module cache per context; name expressions; PTX
// fallback; driver errors that name what failed; a warm second process that loads no compiler.
#include <boost/test/unit_test.hpp>

#include <kjit/kjit.hpp>

#include "../common/sample_kernels.hpp"

#include <cstdio>
#include <cstdlib>
#include <unistd.h>
#include <vector>

using kjit::test::k_saxpy;
using kjit::test::k_scale;

namespace {

// Each test gets its own cache folder.
struct GpuFixture {
  GpuFixture()
  {
    char pattern[] = "/tmp/kjit-gpu-XXXXXX";
    dir = ::mkdtemp(pattern);
    kjit::option::cache_dir(dir);
  }
  ~GpuFixture()
  {
    kjit::option::reset();
    std::system(("rm -rf '" + dir + "'").c_str());
  }
  std::string dir;
};

void run_saxpy(const kjit::Kernel& kernel, const kjit::Context& context)
{
  const int n = 100000;
  std::vector<float> x(n), y(n);
  for (int i = 0; i < n; ++i) {
    x[i] = static_cast<float>(i);
    y[i] = 1.0f;
  }
  kjit::DeviceBuffer dx(context, n * sizeof(float));
  kjit::DeviceBuffer dy(context, n * sizeof(float));
  dx.upload(x.data(), n * sizeof(float));
  dy.upload(y.data(), n * sizeof(float));
  const auto size = kernel.max_potential_block_size();
  BOOST_TEST(size.block > 0);
  const unsigned block = static_cast<unsigned>(size.block);
  kernel.launch({{(n + block - 1) / block}, {block}}, 2.0f, dx.pointer(), dy.pointer(), n);
  kjit::synchronize(context);
  dy.download(y.data(), n * sizeof(float));
  int wrong = 0;
  for (int i = 0; i < n; ++i) {
    wrong += y[i] != 2.0f * static_cast<float>(i) + 1.0f;
  }
  BOOST_TEST(wrong == 0);
}

} // namespace

BOOST_FIXTURE_TEST_SUITE(launch, GpuFixture)

BOOST_AUTO_TEST_CASE(load_and_launch_give_correct_results)
{
  const kjit::Context context = kjit::Context::primary(0);
  const kjit::Kernel kernel = kjit::get_kernel({"saxpy.cu", k_saxpy, {}, {}, {}}, "saxpy");
  run_saxpy(kernel, context);
  BOOST_TEST(kernel.active_blocks_per_multiprocessor(256) > 0);
}

BOOST_AUTO_TEST_CASE(one_program_is_loaded_once_per_context)
{
  const kjit::Context context = kjit::Context::primary(0);
  const std::size_t before = context.loaded_modules();
  kjit::Cache& cache = kjit::default_cache();
  const auto prepared = cache.prepare({"saxpy_once.cu", k_saxpy, {}, {}, {}}, kjit::Arch::of_compute_capability(
                                                                                context.compute_capability() / 10,
                                                                                context.compute_capability() % 10));
  const auto binary = cache.get(prepared);
  const kjit::Module first = context.load(prepared, *binary);
  const kjit::Module second = context.load(prepared, *binary);
  BOOST_TEST(first.handle() == second.handle());
  BOOST_TEST(context.loaded_modules() == before + 1);
}

BOOST_AUTO_TEST_CASE(name_expression_kernels_launch)
{
  kjit::Program program{"scale.cu", k_scale, {}, {}, {"scale<float>"}};
  const kjit::Context context = kjit::Context::primary(0);
  const kjit::Kernel kernel = kjit::get_kernel(program, "scale<float>");
  std::vector<float> x(1000, 3.0f);
  kjit::DeviceBuffer dx(context, x.size() * sizeof(float));
  dx.upload(x.data(), x.size() * sizeof(float));
  kernel.launch({{4}, {256}}, dx.pointer(), 0.5f, 1000);
  kjit::synchronize(context);
  dx.download(x.data(), x.size() * sizeof(float));
  BOOST_TEST(x[0] == 1.5f);
  BOOST_TEST(x[999] == 1.5f);
}

BOOST_AUTO_TEST_CASE(forced_ptx_fallback_loads_ptx_and_runs)
{
  kjit::option::force_ptx(true);
  const kjit::Context context = kjit::Context::primary(0);
  kjit::Cache& cache = kjit::default_cache();
  const auto prepared = cache.prepare({"saxpy_ptx.cu", k_saxpy, {}, {}, {}}, kjit::Arch::parse("compute_80"));
  const auto binary = cache.get(prepared);
  const kjit::Module module = context.load(prepared, *binary);
  BOOST_TEST(module.loaded_from_ptx());
  run_saxpy(module.kernel("saxpy"), context);
}

BOOST_AUTO_TEST_CASE(driver_errors_name_program_kernel_and_device)
{
  const kjit::Kernel kernel = kjit::get_kernel({"named.cu", k_saxpy, {}, {}, {}}, "saxpy");
  try {
    kjit::get_kernel({"named.cu", k_saxpy, {}, {}, {}}, "no_such_kernel");
    BOOST_FAIL("expected CudaError");
  } catch (const kjit::CudaError& e) {
    const std::string what = e.what();
    BOOST_TEST(what.find("no_such_kernel") != std::string::npos, what);
    BOOST_TEST(what.find("named.cu") != std::string::npos, what);
    BOOST_TEST(what.find("device 0") != std::string::npos, what);
    BOOST_TEST(e.result() != 0);
  }
  try {
    kernel.launch({{1}, {4096}}, 1.0f, std::uint64_t{0}, std::uint64_t{0}, 0);  // too many threads
    BOOST_FAIL("expected CudaError");
  } catch (const kjit::CudaError& e) {
    BOOST_TEST(std::string(e.what()).find("saxpy") != std::string::npos, e.what());
  }
}

BOOST_AUTO_TEST_CASE(a_warm_second_process_launches_without_nvrtc)
{
  const char* probe = std::getenv("KJIT_TEST_GPU_PROBE");
  BOOST_TEST_REQUIRE(probe != nullptr);
  const std::string command = "KJIT_CACHE_DIR='" + dir + "' '" + probe + "'";
  std::string output;
  for (int run = 0; run < 2; ++run) {
    output.clear();
    FILE* pipe = ::popen(command.c_str(), "r");
    char line[256];
    while (std::fgets(line, sizeof line, pipe) != nullptr) {
      output += line;
    }
    BOOST_TEST(::pclose(pipe) == 0, output);
  }
  BOOST_TEST(output.find("result: ok") != std::string::npos, output);
  BOOST_TEST(output.find("compiles: 0") != std::string::npos, output);
  BOOST_TEST(output.find("nvrtc_loaded: 0") != std::string::npos, output);
  BOOST_TEST(output.find("nvjitlink_loaded: 0") != std::string::npos, output);
}

BOOST_AUTO_TEST_SUITE_END()
