// On a GPU: load, launch and check results; module cache per context; name expressions; PTX
// fallback; driver errors that name what failed; a warm second process that loads no compiler.
#include <boost/test/unit_test.hpp>

#include <kjit/kjit.hpp>

#include "../common/sample_kernels.hpp"
#include "gpu_fixture.hpp"

#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <unistd.h>
#include <vector>

using kjit::test::k_saxpy;
using kjit::test::k_scale;

namespace {

using kjit::test::GpuFixture;

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

BOOST_AUTO_TEST_CASE(a_launch_on_a_kjit_stream_is_timed_by_events_and_correct)
{
  const kjit::Context context = kjit::Context::primary(0);
  const kjit::Kernel kernel = kjit::get_kernel({"saxpy_stream.cu", k_saxpy, {}, {}, {}}, "saxpy");
  const int n = 1 << 20;
  std::vector<float> x(n, 2.0f), y(n, 1.0f);
  kjit::DeviceBuffer dx(context, n * sizeof(float));
  kjit::DeviceBuffer dy(context, n * sizeof(float));
  dx.upload(x.data(), n * sizeof(float));
  dy.upload(y.data(), n * sizeof(float));
  kjit::Stream stream(context);
  kjit::Event start(context);
  kjit::Event end(context);
  kjit::LaunchConfig config{{(n + 255) / 256}, {256}};
  config.stream = stream.handle();
  start.record(stream);
  kernel.launch(config, 3.0f, dx.pointer(), dy.pointer(), n);
  end.record(stream);
  const float ms = kjit::elapsed_ms(start, end);
  BOOST_TEST(ms > 0.0f);
  BOOST_TEST(ms < 1000.0f);
  stream.synchronize();
  dy.download(y.data(), n * sizeof(float));
  int wrong = 0;
  for (int i = 0; i < n; ++i) {
    wrong += y[i] != 7.0f;
  }
  BOOST_TEST(wrong == 0);
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
  // The device's own real arch: the binary has a cubin, and the forced fallback must skip it.
  const int cc = context.compute_capability();
  const auto prepared = cache.prepare({"saxpy_ptx.cu", k_saxpy, {}, {}, {}}, kjit::Arch::of_compute_capability(cc / 10, cc % 10));
  const auto binary = cache.get(prepared);
  BOOST_TEST_REQUIRE(!binary->cubin.empty());
  const kjit::Module module = context.load(prepared, *binary);
  BOOST_TEST(module.loaded_from_ptx());
  run_saxpy(module.kernel("saxpy"), context);
}

BOOST_AUTO_TEST_CASE(more_than_48_kib_of_dynamic_shared_memory_launches)
{
  const char* source = R"(
extern "C" __global__ void reverse_through_shared(const float* in, float* out, int n)
{
  extern __shared__ float buffer[];
  for (int i = threadIdx.x; i < n; i += blockDim.x) buffer[i] = in[i];
  __syncthreads();
  for (int i = threadIdx.x; i < n; i += blockDim.x) out[i] = buffer[n - 1 - i];
}
)";
  const kjit::Context context = kjit::Context::primary(0);
  const kjit::Kernel kernel = kjit::get_kernel({"big_shared.cu", source, {}, {}, {}}, "reverse_through_shared");
  const kjit::KernelAttributes attributes = kernel.attributes();
  BOOST_TEST(attributes.registers > 0);
  BOOST_TEST(attributes.max_threads > 0);
  BOOST_TEST(attributes.max_dynamic_shared_optin_bytes > 64 * 1024);
  const int n = 24 * 1024;  // 96 KiB of floats
  std::vector<float> in(n), out(n, 0.0f);
  for (int i = 0; i < n; ++i) {
    in[i] = static_cast<float>(i);
  }
  kjit::DeviceBuffer din(context, n * sizeof(float));
  kjit::DeviceBuffer dout(context, n * sizeof(float));
  din.upload(in.data(), n * sizeof(float));
  kernel.launch({{1}, {256}, static_cast<unsigned>(n * sizeof(float))}, din.pointer(), dout.pointer(), n);
  kjit::synchronize(context);
  dout.download(out.data(), n * sizeof(float));
  BOOST_TEST(out[0] == static_cast<float>(n - 1));
  BOOST_TEST(out[n - 1] == 0.0f);
  BOOST_TEST(kernel.attributes().max_dynamic_shared_bytes == attributes.max_dynamic_shared_optin_bytes);
}

BOOST_AUTO_TEST_CASE(a_rejected_launch_never_reaches_the_device)
{
  const kjit::Context context = kjit::Context::primary(0);
  const kjit::Kernel kernel = kjit::get_kernel({"rejected.cu", k_saxpy, {}, {}, {}}, "saxpy");
  std::vector<float> x(256, 1.0f), y(256, 2.0f);
  kjit::DeviceBuffer dx(context, 1024), dy(context, 1024);
  dx.upload(x.data(), 1024);
  dy.upload(y.data(), 1024);
  BOOST_CHECK_THROW(kernel.launch({{1}, {256}}, 3.0, dx.pointer(), dy.pointer(), 256), kjit::LaunchError);
  BOOST_CHECK_THROW(kernel.launch({{1}, {256}}, 3.0f, dx.pointer(), dy.pointer()), kjit::LaunchError);
  kjit::synchronize(context);
  dy.download(y.data(), 1024);
  BOOST_TEST(y[0] == 2.0f);  // untouched
  kernel.launch({{1}, {256}}, 3.0f, dx.pointer(), dy.pointer(), 256);
  kjit::synchronize(context);
  dy.download(y.data(), 1024);
  BOOST_TEST(y[255] == 5.0f);
}

BOOST_AUTO_TEST_CASE(parameter_layouts_from_the_cubin_match_cuFuncGetParamInfo)
{
  void* library = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  BOOST_TEST_REQUIRE(library != nullptr);
  const auto get = reinterpret_cast<PFN_cuGetProcAddress_v12000>(::dlsym(library, "cuGetProcAddress_v2"));
  BOOST_TEST_REQUIRE(get != nullptr);
  void* address = nullptr;
  get("cuFuncGetParamInfo", &address, 12040, CU_GET_PROC_ADDRESS_DEFAULT, nullptr);
  BOOST_TEST_REQUIRE(address != nullptr);  // every driver kjit accepts (13.0+) has it
  const auto param_info = reinterpret_cast<PFN_cuFuncGetParamInfo_v12040>(address);

  const kjit::Context context = kjit::Context::primary(0);
  const int cc = context.compute_capability();
  kjit::Cache& cache = kjit::default_cache();
  const kjit::Program program{"param_info.cu",
                              "struct Pair { double a, b; };\n"
                              "extern \"C\" __global__ void mixed(char c, Pair p, short s, double* out, int n)\n"
                              "{ if (n) *out = c + p.a + p.b + s; }\n"
                              "extern \"C\" __global__ void grid_constant(const __grid_constant__ Pair p, float* out)\n"
                              "{ *out = p.a; }\n",
                              {},
                              {},
                              {}};
  const auto prepared = cache.prepare(program, kjit::Arch::of_compute_capability(cc / 10, cc % 10));
  const auto binary = cache.get(prepared);
  const kjit::Module module = context.load(prepared, *binary);
  int checked = 0;
  for (const kjit::KernelInfo& info : kjit::read_kernels(binary->cubin)) {
    const auto function = static_cast<CUfunction>(module.kernel(info.name).handle());
    for (const kjit::KernelParam& param : info.params) {
      std::size_t offset = 0;
      std::size_t size = 0;
      BOOST_TEST_REQUIRE(param_info(function, param.index, &offset, &size) == CUDA_SUCCESS);
      BOOST_TEST(offset == param.offset, info.name << " parameter " << param.index);
      BOOST_TEST(size == param.size, info.name << " parameter " << param.index);
      ++checked;
    }
    std::size_t offset = 0;
    std::size_t size = 0;
    BOOST_TEST(param_info(function, info.params.size(), &offset, &size) != CUDA_SUCCESS);  // no more parameters
  }
  BOOST_TEST(checked == 7);
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
