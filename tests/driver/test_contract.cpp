// kjit against the fake driver's contract: entry point versions, context stacks, retains, modules,
// launch parameters as .nv.info lays them out, the 48 KiB limit, errors that name the object.
#include <boost/test/unit_test.hpp>

#include "../common/sample_kernels.hpp"
#include "../unit/fixture.hpp"
#include "fake_driver.hpp"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <thread>

#include <sys/wait.h>
#include <unistd.h>

using kjit::test::fake;

namespace {

// A test's own cache; each test ends with every push popped and every retain released.
struct Contract : kjit::test::CacheFixture {
  Contract()
  {
    BOOST_TEST_REQUIRE(kjit::driver_status().available, kjit::driver_status().reason);
    kjit::option::cache_dir(config.cache_dir);
    fake().clear_log();
    m_retains = fake().primary_retains(0);
  }
  ~Contract() { kjit::option::reset(); }

  kjit::Module load(const kjit::Context& context, const kjit::Program& program, const char* arch = "sm_90")
  {
    kjit::Cache cache(config);
    const auto prepared = cache.prepare(program, kjit::Arch::parse(arch));
    return context.load(prepared, *cache.get(prepared));
  }

  // What every scenario must leave behind once its kjit objects are gone.
  void check_balanced() const
  {
    BOOST_TEST(fake().pushes() == fake().pops());
    BOOST_TEST(fake().stack_depth() == 0);
    BOOST_TEST(fake().primary_retains(0) == m_retains);
    BOOST_TEST(std::string(fake().violations()).empty(), fake().violations());
  }

  int m_retains = 0;
};

const char* const k_big_shared = R"(
extern "C" __global__ void big(float* out)
{
  extern __shared__ float dynamic[];
  __shared__ float fixed[256];
  fixed[threadIdx.x] = threadIdx.x;
  dynamic[threadIdx.x] = fixed[255 - threadIdx.x];
  __syncthreads();
  out[threadIdx.x] = dynamic[threadIdx.x];
}
)";

} // namespace

BOOST_FIXTURE_TEST_SUITE(contract, Contract)

BOOST_AUTO_TEST_CASE(synchronize_passes_its_context_as_the_13000_abi_wants)
{
  {
    BOOST_TEST(kjit::driver_status().driver_version == 13000);
    const kjit::Context context = kjit::Context::primary(0);
    kjit::synchronize(context);
    // cuCtxSynchronize at 13000 is cuCtxSynchronize_v2(CUcontext): kjit must pass the context.
    BOOST_TEST(fake().count("cuCtxSynchronize_v2 ctx=P0") == 1, fake().log());
  }
  check_balanced();
}

BOOST_AUTO_TEST_CASE(current_context_of_the_runtime_is_retained_and_released_by_handle)
{
  // As the CUDA runtime does: retain device 1's primary context and make it current.
  void* runtime_context = nullptr;
  BOOST_TEST_REQUIRE(fake().retain_primary(&runtime_context, 101) == 0);
  fake().set_current(runtime_context);
  const int before = fake().primary_retains(1);
  {
    const kjit::Context context = kjit::Context::current();
    BOOST_TEST(context.handle() == runtime_context);
    BOOST_TEST(context.device() == 1);  // the ordinal, not the CUdevice handle (101)
    BOOST_TEST(fake().primary_retains(1) == before + 1);  // kjit holds its own retain
    BOOST_TEST(fake().count("cuCtxGetDevice_v2 ctx=P1") == 1, fake().log());
    BOOST_TEST(kjit::current_device() == 1);
  }
  BOOST_TEST(fake().primary_retains(1) == before);
  BOOST_TEST(fake().count("cuDevicePrimaryCtxRelease dev=101") == 1, fake().log());
  fake().set_current(nullptr);
  BOOST_TEST(fake().release_primary(101) == 0);
  check_balanced();
}

BOOST_AUTO_TEST_CASE(auto_arch_is_the_current_devices)
{
  // Device 0 is sm_90 and device 1 sm_80 (KJIT_FAKE_CUDA_CC=90,80).
  BOOST_TEST(kjit::current_device_arch(kjit::supported_archs).str() == "sm_90");
  void* runtime_context = nullptr;
  BOOST_TEST_REQUIRE(fake().retain_primary(&runtime_context, 101) == 0);
  fake().set_current(runtime_context);
  BOOST_TEST(kjit::current_device_arch(kjit::supported_archs).str() == "sm_80");
  const kjit::Kernel kernel = kjit::get_kernel({"auto_arch.cu", kjit::test::k_saxpy, {}, {}, {}}, "saxpy");
  BOOST_TEST(kjit::get({"auto_arch.cu", kjit::test::k_saxpy, {}, {}, {}})->arch == "sm_80");
  fake().set_current(nullptr);
  BOOST_TEST(fake().release_primary(101) == 0);
}

BOOST_AUTO_TEST_CASE(every_retain_and_push_is_undone_and_modules_unload_in_their_context)
{
  {
    const kjit::Context context = kjit::Context::primary(0);
    const kjit::Context again = kjit::Context::primary(0);
    BOOST_TEST(fake().primary_retains(0) == m_retains + 1);  // one retain per context State
    const kjit::Module module = load(context, {"retain.cu", kjit::test::k_saxpy, {}, {}, {}});
    BOOST_TEST(fake().loaded_modules() == 1);
    const kjit::Kernel kernel = module.kernel("saxpy");
    kjit::DeviceBuffer buffer(again, 1024);
    kernel.launch({{1}, {256}}, 2.0f, buffer.pointer(), buffer.pointer(), 256);
  }
  BOOST_TEST(fake().loaded_modules() == 0);
  BOOST_TEST(fake().count("cuModuleUnload M") == 1, fake().log());
  BOOST_TEST(fake().count("cuMemFree") == 1);
  // Released by the CUdevice handle (100), which is not the ordinal (0).
  BOOST_TEST(fake().count("cuDevicePrimaryCtxRelease dev=100") >= 1, fake().log());
  check_balanced();
  // The registry entry went with the State: a new primary context State starts empty.
  BOOST_TEST(kjit::Context::primary(0).loaded_modules() == 0u);
}

// wrap() is told the device: a context of another device (or none) would give it the wrong arch
// and device limits, and the driver's refusal would come later, naming neither.
BOOST_AUTO_TEST_CASE(wrapping_a_context_with_another_devices_ordinal_or_no_context_is_refused)
{
  void* owned = fake().create_context(1);  // on device 1 (sm_80), current
  try {
    kjit::Context::wrap(owned, 0);
    BOOST_ERROR("expected an Error");
  } catch (const kjit::Error& e) {
    BOOST_TEST(std::string(e.what()).find("device 1") != std::string::npos, e.what());
  }
  BOOST_CHECK_THROW(kjit::Context::wrap(nullptr, 0), kjit::Error);
  BOOST_TEST(kjit::Context::wrap(owned, 1).compute_capability() == 80);
  fake().destroy_context(owned);
  check_balanced();
}

BOOST_AUTO_TEST_CASE(a_module_whose_context_is_gone_is_not_unloaded)
{
  void* owned = fake().create_context(0);  // the application's own context, current
  {
    const kjit::Context context = kjit::Context::wrap(owned, 0);
    const kjit::Module module = load(context, {"owned.cu", kjit::test::k_saxpy, {}, {}, {}});
    BOOST_TEST(fake().loaded_modules() == 1);
    fake().destroy_context(owned);  // the application destroys it first (and its modules with it)
  }
  BOOST_TEST(fake().count("cuModuleUnload") == 0, fake().log());
  check_balanced();
}

// cuMemAlloc refuses 0 bytes (CUDA_ERROR_INVALID_VALUE): a buffer of an empty vector holds none.
BOOST_AUTO_TEST_CASE(a_buffer_of_no_bytes_holds_no_memory)
{
  {
    const kjit::Context context = kjit::Context::primary(0);
    kjit::DeviceBuffer empty(context, 0);
    BOOST_TEST(empty.pointer() == 0u);
    BOOST_TEST(empty.size() == 0u);
    empty.upload(nullptr, 0);
    empty.download(nullptr, 0);
    BOOST_CHECK_THROW(empty.upload("x", 1), kjit::Error);
    kjit::DeviceBuffer moved(std::move(empty));
    BOOST_TEST(moved.pointer() == 0u);
  }
  BOOST_TEST(fake().count("cuMemAlloc") == 0, fake().log());
  BOOST_TEST(fake().count("cuMemFree") == 0, fake().log());
  check_balanced();
}

// cuCtxDestroy frees the context's memory: a buffer outliving its (wrapped) context frees nothing,
// as a module's unload is skipped (the address may be another allocation's by then).
BOOST_AUTO_TEST_CASE(a_buffer_whose_context_is_gone_is_not_freed)
{
  void* owned = fake().create_context(0);  // the application's own context, current
  {
    const kjit::Context context = kjit::Context::wrap(owned, 0);
    kjit::DeviceBuffer buffer(context, 256);
    fake().destroy_context(owned);  // the application destroys it first (and its memory with it)
  }
  BOOST_TEST(fake().count("cuMemFree") == 0, fake().log());
  check_balanced();
}

BOOST_AUTO_TEST_CASE(parameters_are_laid_out_as_the_cubin_says)
{
  {
    const kjit::Context context = kjit::Context::primary(0);
    const kjit::Kernel kernel = load(context, {"layout.cu", kjit::test::k_saxpy, {}, {}, {}}).kernel("saxpy");
    const std::uint64_t x = 0x1122334455667788;
    const std::uint64_t y = 0x0102030405060708;
    kernel.launch({{1}, {64}}, 2.0f, x, y, 1000);
    // saxpy(float a, const float* x, float* y, int n): a at 0, x at 8, y at 16, n at 24 (.nv.info).
    BOOST_TEST(std::string(fake().last_params()) ==
               "00000040" "00000000" "8877665544332211" "0807060504030201" "e8030000");
  }
  check_balanced();
}

BOOST_AUTO_TEST_CASE(dynamic_shared_memory_over_48_kib_raises_the_limit_once)
{
  {
    const kjit::Context context = kjit::Context::primary(0);
    const kjit::Kernel kernel = load(context, {"big.cu", k_big_shared, {}, {}, {}}).kernel("big");
    const kjit::KernelAttributes before = kernel.attributes();
    BOOST_TEST(before.static_shared_bytes >= 1024);
    BOOST_TEST(before.max_dynamic_shared_bytes == 48 * 1024 - before.static_shared_bytes);
    BOOST_TEST(before.max_dynamic_shared_optin_bytes == 227 * 1024 - before.static_shared_bytes);
    BOOST_TEST(before.max_threads == 1024);
    BOOST_TEST(before.registers > 0);
    kjit::DeviceBuffer out(context, 1024);
    kernel.launch({{1}, {256}, 40 * 1024}, out.pointer());
    BOOST_TEST(fake().count("cuFuncSetAttribute") == 0);  // not needed under 48 KiB
    kernel.launch({{1}, {256}, 100 * 1024}, out.pointer());
    kernel.launch({{1}, {256}, 200 * 1024}, out.pointer());
    BOOST_TEST(fake().count("cuFuncSetAttribute 8 ") == 1, fake().log());
    BOOST_TEST(fake().count("cuLaunchKernel big") == 3);
    BOOST_TEST(kernel.attributes().max_dynamic_shared_bytes == before.max_dynamic_shared_optin_bytes);
    // More than the device has is the driver's error, named.
    BOOST_CHECK_EXCEPTION(kernel.launch({{1}, {256}, 300 * 1024}, out.pointer()), kjit::CudaError,
                          [](const kjit::CudaError& e) { return std::strstr(e.what(), "big of big.cu") != nullptr; });
  }
  check_balanced();
}

// The 48 KiB a launch gets without opting in is static and dynamic together: a kernel with static
// shared memory can't take 48 KiB of dynamic without the raise (it was only raised over 48 KiB).
BOOST_AUTO_TEST_CASE(dynamic_shared_memory_over_what_the_static_part_leaves_raises_the_limit)
{
  {
    const kjit::Context context = kjit::Context::primary(0);
    const kjit::Kernel kernel = load(context, {"big_edge.cu", k_big_shared, {}, {}, {}}).kernel("big");
    kjit::DeviceBuffer out(context, 1024);
    const unsigned fits = static_cast<unsigned>(kernel.attributes().max_dynamic_shared_bytes);
    BOOST_TEST(fits < 48 * 1024u);
    kernel.launch({{1}, {256}, fits}, out.pointer());
    BOOST_TEST(fake().count("cuFuncSetAttribute") == 0, fake().log());
    kernel.launch({{1}, {256}, 48 * 1024}, out.pointer());
    kernel.launch({{1}, {256}, fits + 1}, out.pointer());
    BOOST_TEST(fake().count("cuFuncSetAttribute 8 ") == 1, fake().log());
    BOOST_TEST(fake().count("cuLaunchKernel big") == 3);
  }
  check_balanced();
}

BOOST_AUTO_TEST_CASE(driver_errors_are_cuda_errors_naming_the_object)
{
  {
    const kjit::Context context = kjit::Context::primary(0);
    const kjit::Module module = load(context, {"named.cu", kjit::test::k_saxpy, {}, {}, {}});
    try {
      module.kernel("no_such_kernel");
      BOOST_FAIL("expected CudaError");
    } catch (const kjit::CudaError& e) {
      const std::string what = e.what();
      BOOST_TEST(what.find("no_such_kernel") != std::string::npos, what);
      BOOST_TEST(what.find("named.cu") != std::string::npos, what);
      BOOST_TEST(what.find("device 0") != std::string::npos, what);
      BOOST_TEST(what.find("CUDA_ERROR_NOT_FOUND") != std::string::npos, what);
      BOOST_TEST(e.result() == 500);
    }
    try {
      module.kernel("saxpy").launch({{1}, {2048}}, 1.0f, std::uint64_t{0}, std::uint64_t{0}, 0);
      BOOST_FAIL("expected CudaError");
    } catch (const kjit::CudaError& e) {
      const std::string what = e.what();
      BOOST_TEST(what.find("saxpy of named.cu on device 0") != std::string::npos, what);
      BOOST_TEST(what.find("block 2048x1x1") != std::string::npos, what);
      BOOST_TEST(e.result() == 1);
    }
  }
  check_balanced();
}

BOOST_AUTO_TEST_CASE(threads_have_their_own_context_stacks)
{
  {
    const kjit::Context context = kjit::Context::primary(0);
    const kjit::Kernel kernel = load(context, {"threads.cu", kjit::test::k_saxpy, {}, {}, {}}).kernel("saxpy");
    std::vector<std::thread> threads;
    std::atomic<int> left_pushed{0};  // Boost.Test's assertions are not thread-safe: count here
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&] {
        for (int i = 0; i < 50; ++i) {
          kernel.launch({{1}, {32}}, 1.0f, std::uint64_t{0}, std::uint64_t{0}, 0);
        }
        left_pushed += fake().stack_depth();
      });
    }
    for (auto& thread : threads) {
      thread.join();
    }
    BOOST_TEST(left_pushed == 0);
    BOOST_TEST(fake().count("cuLaunchKernel saxpy") == 200);
  }
  check_balanced();
}

BOOST_AUTO_TEST_CASE(ptx_modules_load_and_launch)
{
  {
    kjit::option::force_ptx(true);
    const kjit::Context context = kjit::Context::primary(0);
    kjit::Cache cache(kjit::current_config());
    const auto prepared = cache.prepare({"ptx.cu", kjit::test::k_saxpy, {}, {}, {}}, kjit::Arch::parse("sm_90"));
    const kjit::Module module = context.load(prepared, *cache.get(prepared));
    BOOST_TEST(module.loaded_from_ptx());
    BOOST_TEST(fake().count(" ptx -> M") == 1, fake().log());
    module.kernel("saxpy").launch({{1}, {32}}, 2.0f, std::uint64_t{0}, std::uint64_t{0}, 7);
    BOOST_TEST(std::string(fake().last_params()).substr(48) == "07000000");
  }
  check_balanced();
}

BOOST_AUTO_TEST_CASE(launch_arguments_are_checked_against_the_cubin_before_the_driver)
{
  {
    const kjit::Context context = kjit::Context::primary(0);
    const kjit::Kernel saxpy = load(context, {"checked.cu", kjit::test::k_saxpy, {}, {}, {}}).kernel("saxpy");
    const std::uint64_t x = 0;
    const auto rejected = [&](auto&& launch, std::size_t parameter, std::size_t expected, std::size_t given) {
      try {
        launch();
        BOOST_ERROR("expected LaunchError");
      } catch (const kjit::LaunchError& e) {
        BOOST_TEST(e.kernel() == "saxpy");
        BOOST_TEST(e.parameter() == parameter, e.what());
        BOOST_TEST(e.expected() == expected, e.what());
        BOOST_TEST(e.given() == given, e.what());
        BOOST_TEST(std::string(e.what()).find("saxpy") != std::string::npos, e.what());
        BOOST_TEST(std::string(e.what()).find("checked.cu") != std::string::npos, e.what());
      }
    };
    rejected([&] { saxpy.launch({{1}, {32}}, 2.0f, x, x); }, 3, 4, 3);                  // one missing
    rejected([&] { saxpy.launch({{1}, {32}}, 2.0f, x, x, 5, 6); }, 4, 4, 5);            // one extra
    rejected([&] { saxpy.launch({{1}, {32}}, 2.0f, x, x, std::size_t{5}); }, 3, 4, 8);  // size_t for int
    rejected([&] { saxpy.launch({{1}, {32}}, 2.0, x, x, 5); }, 0, 4, 8);                // double for float
    rejected([&] { saxpy.launch({{1}, {32}}, 2.0f, 1u, x, 5); }, 1, 8, 4);              // 32 bits for a pointer
    kjit::ArgumentPack short_pack(2.0f, x);
    rejected([&] { saxpy.launch_packed({{1}, {32}}, short_pack); }, 2, 4, 2);
    rejected([&] { saxpy.launch_raw({{1}, {32}}, short_pack.data(), 2); }, 2, 4, 2);
    BOOST_TEST(fake().count("cuLaunchKernel") == 0, fake().log());  // nothing reached the driver

    kjit::ArgumentPack right(2.0f, x, x, 5);
    saxpy.launch_packed({{1}, {32}}, right);
    saxpy.launch_raw({{1}, {32}}, right.data(), right.size());
    saxpy.launch({{1}, {32}}, 2.0f, x, x, 5);
    BOOST_TEST(fake().count("cuLaunchKernel saxpy") == 3);
  }
  check_balanced();
}

BOOST_AUTO_TEST_CASE(structs_by_value_and_templates_are_checked_by_size)
{
  {
    const kjit::Context context = kjit::Context::primary(0);
    struct Pair {
      double a;
      double b;
    };
    struct Small {
      float a;
    };
    const kjit::Kernel by_value =
      load(context, {"by_value.cu",
                     "struct Pair { double a, b; };\n"
                     "extern \"C\" __global__ void by_value(Pair p, char c, double* out) { *out = p.a + p.b + c; }\n",
                     {}, {}, {}})
        .kernel("by_value");
    by_value.launch({{1}, {1}}, Pair{1.0, 2.0}, 'c', std::uint64_t{0});
    BOOST_CHECK_THROW(by_value.launch({{1}, {1}}, Small{1.0f}, 'c', std::uint64_t{0}), kjit::LaunchError);
    BOOST_CHECK_THROW(by_value.launch({{1}, {1}}, Pair{1.0, 2.0}, 7, std::uint64_t{0}), kjit::LaunchError);
    // Over 16383 bytes the cubin describes the parameter with EIATTR_KPARAM_INFO_V2.
    struct Big {
      unsigned char bytes[20000];
    };
    const kjit::Kernel big =
      load(context, {"big_param.cu",
                     "struct Big { unsigned char bytes[20000]; };\n"
                     "extern \"C\" __global__ void big(Big b, int* out) { *out = b.bytes[19999]; }\n",
                     {}, {}, {}})
        .kernel("big");
    Big value{};
    value.bytes[0] = 0xab;
    value.bytes[19999] = 0xcd;
    big.launch({{1}, {1}}, value, std::uint64_t{0x1122334455667788});
    const std::string bank = fake().last_params();
    BOOST_TEST(bank.size() == 2 * 20008u);
    BOOST_TEST(bank.substr(0, 2) == "ab");
    BOOST_TEST(bank.substr(2 * 19999) == "cd" "8877665544332211");
    BOOST_CHECK_THROW(big.launch({{1}, {1}}, Pair{1.0, 2.0}, std::uint64_t{0}), kjit::LaunchError);
    const kjit::Kernel scale =
      load(context, {"scale_checked.cu", kjit::test::k_scale, {}, {}, {"scale<float>"}}).kernel("scale<float>");
    scale.launch({{1}, {32}}, std::uint64_t{0}, 0.5f, 32);
    BOOST_CHECK_THROW(scale.launch({{1}, {32}}, std::uint64_t{0}, 0.5, 32), kjit::LaunchError);
    BOOST_TEST(fake().count("cuLaunchKernel") == 3, fake().log());
  }
  check_balanced();
}

// A parent's thread holds the context's module lock for as long as the driver loads (a PTX JIT
// takes seconds) when another thread forks: the child's load is a CudaError (a forked child never
// calls its parent's driver), not a wait for a lock no thread of the child will release; so is
// its loaded_modules(), which needs no driver but the lock (it waited for ever).
BOOST_AUTO_TEST_CASE(a_forked_childs_load_while_its_parent_loads_is_an_error_not_a_hang)
{
  {
    const kjit::Context context = kjit::Context::primary(0);
    kjit::Cache cache(config);
    const auto first = cache.prepare({"fork_first.cu", kjit::test::k_saxpy, {}, {}, {}}, kjit::Arch::parse("sm_90"));
    const auto second = cache.prepare({"fork_second.cu", kjit::test::k_scale, {}, {}, {"scale<float>"}},
                                      kjit::Arch::parse("sm_90"));
    const auto first_binary = cache.get(first);
    const auto second_binary = cache.get(second);
    fake().hold_loads();
    std::thread loader;
    // Whatever fails here (a thread or process the host can't start now), the hold ends with the
    // test: later loads would wait in it for ever.
    struct Release {
      std::thread& loader;
      ~Release()
      {
        fake().release_loads();
        if (loader.joinable()) {
          loader.join();
        }
      }
    } release{loader};
    loader = std::thread([&] {
      try {
        context.load(first, *first_binary);
      } catch (...) {
      }
      fake().release_loads();  // a load that never reached the hold ends the wait below
    });
    // The loader is inside cuModuleLoadDataEx, holding the context's lock.
    BOOST_TEST_REQUIRE(fake().wait_load_held(), "the load never reached cuModuleLoadDataEx");
    const pid_t child = ::fork();
    BOOST_TEST_REQUIRE(child >= 0, "fork: " << std::strerror(errno));
    if (child == 0) {
      ::alarm(30);  // a hang ends here, as SIGALRM
      int code = 1;
      try {
        context.load(second, *second_binary);
      } catch (const kjit::CudaError& e) {
        code = std::strstr(e.what(), "fork()") != nullptr ? 0 : 2;
      } catch (...) {
        code = 3;
      }
      try {  // a call that needs no driver but the same lock
        std::ignore = context.loaded_modules();
        code = 4;
      } catch (const kjit::CudaError&) {
      }
      ::_exit(code);
    }
    int status = 0;
    ::waitpid(child, &status, 0);
    fake().release_loads();
    loader.join();
    BOOST_TEST(WIFEXITED(status), "the child ended by signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0));
    BOOST_TEST(WEXITSTATUS(status) == 0);
    BOOST_TEST(context.loaded_modules() == 1u);
  }
  check_balanced();
}

BOOST_AUTO_TEST_SUITE_END()
