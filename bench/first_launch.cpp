// kjit's side of the GPU comparison (bench/gpu/first_launch.py, docs/benchmarks.md "GPU
// measurements"): the same saxpy kernel the other JITs launch, from a fresh process.
//   kjit_bench_first_launch launch        get, load, launch, synchronize, check the result
//   kjit_bench_first_launch modules N     N distinct cached kernels: Context::load per module vs
//                                          the driver's cuModuleLoadData alone on the same cubins
//   kjit_bench_first_launch modules N raw-first   the same, the driver's loads first too
// The cache folder is KJIT_CACHE_DIR. "to_first_launch_ms" counts from KJIT_BENCH_T0_NS (the
// parent's CLOCK_MONOTONIC just before it spawned this process) when set, so it includes the
// process's start and the loading of libkjit; "in_process_ms" counts from main(). Exits 77 without
// a usable GPU, 1 when the kernel computed a wrong result.
#include <kjit/kjit.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda.h>
#include <dlfcn.h>
#include <string>
#include <time.h>
#include <vector>

namespace {

const char* const saxpy_source = R"(extern "C" __global__ void saxpy(float a, const float* x, float* y, int n)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
)";

double monotonic_ms()
{
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<double>(now.tv_sec) * 1e3 + static_cast<double>(now.tv_nsec) / 1e6;
}

double since_spawn_ms(double main_ms)
{
  const char* t0 = std::getenv("KJIT_BENCH_T0_NS");
  return t0 != nullptr ? monotonic_ms() - static_cast<double>(std::strtoull(t0, nullptr, 10)) / 1e6
                       : monotonic_ms() - main_ms;
}

int launch(double main_ms)
{
  const kjit::Program program{"saxpy.cu", saxpy_source, {}, {}, {}};
  const kjit::Kernel kernel = kjit::get_kernel(program, "saxpy");
  const kjit::Context context = kjit::Context::current();
  const int n = 1 << 20;
  std::vector<float> x(n, 1.0f);
  std::vector<float> y(n, 2.0f);
  kjit::DeviceBuffer dx(context, n * sizeof(float));
  kjit::DeviceBuffer dy(context, n * sizeof(float));
  dx.upload(x.data(), n * sizeof(float));
  dy.upload(y.data(), n * sizeof(float));
  kernel.launch({{(n + 255) / 256}, {256}}, 3.0f, dx.pointer(), dy.pointer(), n);
  kjit::synchronize(context);
  const double to_first_launch = since_spawn_ms(main_ms);
  const double in_process = monotonic_ms() - main_ms;
  dy.download(y.data(), n * sizeof(float));
  const bool right = std::all_of(y.begin(), y.end(), [](float v) { return v == 5.0f; });
  std::printf("to_first_launch_ms: %.3f\nin_process_ms: %.3f\nright: %d\n", to_first_launch, in_process, right ? 1 : 0);
  return right ? 0 : 1;
}

double p50(std::vector<double> samples)
{
  std::sort(samples.begin(), samples.end());
  return samples.empty() ? 0.0 : samples[samples.size() / 2];
}

// The driver's own cost, without kjit: cuModuleLoadData and cuModuleUnload found in libcuda.so.1
// (both kept their first signature, so the unversioned symbols are right).
struct RawDriver {
  CUresult (*load)(CUmodule*, const void*) = nullptr;
  CUresult (*load_ex)(CUmodule*, const void*, unsigned, CUjit_option*, void**) = nullptr;
  CUresult (*unload)(CUmodule) = nullptr;
  CUresult (*set_current)(CUcontext) = nullptr;
  CUresult (*push)(CUcontext) = nullptr;
  CUresult (*pop)(CUcontext*) = nullptr;

  bool bind()
  {
    void* cuda = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (cuda == nullptr) {
      return false;
    }
    load = reinterpret_cast<decltype(load)>(::dlsym(cuda, "cuModuleLoadData"));
    unload = reinterpret_cast<decltype(unload)>(::dlsym(cuda, "cuModuleUnload"));
    load_ex = reinterpret_cast<decltype(load_ex)>(::dlsym(cuda, "cuModuleLoadDataEx"));
    set_current = reinterpret_cast<decltype(set_current)>(::dlsym(cuda, "cuCtxSetCurrent"));
    push = reinterpret_cast<decltype(push)>(::dlsym(cuda, "cuCtxPushCurrent_v2"));
    pop = reinterpret_cast<decltype(pop)>(::dlsym(cuda, "cuCtxPopCurrent_v2"));
    return load != nullptr && load_ex != nullptr && unload != nullptr && set_current != nullptr &&
           push != nullptr && pop != nullptr;
  }
};

int modules(int count, bool raw_first)
{
  const kjit::Context context = kjit::Context::current();
  const kjit::Arch arch = kjit::Arch::parse("sm_" + std::to_string(context.compute_capability()));
  std::vector<std::shared_ptr<const kjit::Binary>> binaries;
  std::vector<double> lookup_us;
  for (int i = 0; i < count; ++i) {
    // A distinct kernel each: the constant differs, so the cubin does.
    std::string source = saxpy_source;
    source.replace(source.find("a * x[i]"), 1, "(a + " + std::to_string(i) + ".0f)");
    const kjit::Program program{"saxpy_" + std::to_string(i) + ".cu", source, {}, {}, {}};
    const double t = monotonic_ms();
    binaries.push_back(kjit::get(program, arch));
    lookup_us.push_back((monotonic_ms() - t) * 1e3);
  }
  RawDriver raw;
  const bool have_raw = raw.bind() && raw.set_current(static_cast<CUcontext>(context.handle())) == CUDA_SUCCESS;
  // The driver's load of each cubin, each kept loaded until all are, as kjit's are (the driver's cost
  // grows with the modules resident); plain, or with the error-log buffer kjit passes (driver/image.cpp).
  static char log[8192];
  CUjit_option keys[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* values[] = {log, reinterpret_cast<void*>(std::uintptr_t{sizeof log - 1})};
  const auto raw_pass = [&](bool ex) {
    std::vector<double> us;
    std::vector<CUmodule> loaded;
    for (const auto& binary : binaries) {
      CUmodule module = nullptr;
      const double t = monotonic_ms();
      const CUresult status =
        ex ? raw.load_ex(&module, binary->cubin.data(), 2, keys, values) : raw.load(&module, binary->cubin.data());
      us.push_back((monotonic_ms() - t) * 1e3);
      if (status != CUDA_SUCCESS) {
        std::fprintf(stderr, "modules: cuModuleLoadData%s failed (%d)\n", ex ? "Ex" : "", static_cast<int>(status));
        std::exit(1);
      }
      loaded.push_back(module);
    }
    for (CUmodule module : loaded) {
      raw.unload(module);
    }
    return us;
  };
  // raw-first: a pass of the driver's loads before kjit's, so that neither side is the first to
  // load into the context.
  std::vector<double> before_us;
  if (raw_first && have_raw) {
    before_us = raw_pass(false);
  }
  std::vector<double> load_us;
  for (const auto& binary : binaries) {
    const double t = monotonic_ms();
    (void)context.load(*binary);
    load_us.push_back((monotonic_ms() - t) * 1e3);
  }
  std::printf("modules: %d\ncubin_bytes: %zu\nlookup_p50_us: %.3f\nkjit_load_p50_us: %.3f\n", count,
              binaries.front()->cubin.size(), p50(lookup_us), p50(load_us));
  if (!have_raw) {
    // A driver that exports only through cuGetProcAddress (tests/driver/fake): kjit's figures alone.
    std::printf("cuModuleLoadData_p50_us: (not exported by this libcuda.so.1)\n");
    return 0;
  }
  if (!before_us.empty()) {
    std::printf("cuModuleLoadData_before_kjit_p50_us: %.3f\n", p50(before_us));
  }
  const std::vector<double> raw_us = raw_pass(false);
  const std::vector<double> raw_ex_us = raw_pass(true);
  // What kjit adds around the driver's load: a push and a pop of the context, and a module it
  // loaded already (the content's hash and the map).
  std::vector<double> push_pop_us;
  std::vector<double> again_us;
  for (const auto& binary : binaries) {
    CUcontext popped = nullptr;
    double t = monotonic_ms();
    raw.push(static_cast<CUcontext>(context.handle()));
    raw.pop(&popped);
    push_pop_us.push_back((monotonic_ms() - t) * 1e3);
    t = monotonic_ms();
    (void)context.load(*binary);
    again_us.push_back((monotonic_ms() - t) * 1e3);
  }
  std::printf("cuModuleLoadDataEx_with_log_p50_us: %.3f\npush_pop_p50_us: %.3f\nkjit_load_loaded_p50_us: %.3f\n",
              p50(raw_ex_us), p50(push_pop_us), p50(again_us));
  std::printf("cuModuleLoadData_p50_us: %.3f\n", p50(raw_us));
  return 0;
}

} // namespace

int main(int argc, char** argv)
{
  const double main_ms = monotonic_ms();
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode != "launch" && mode != "modules") {
    std::fprintf(stderr, "usage: kjit_bench_first_launch launch | modules N\n");
    return 2;
  }
  try {
    if (!kjit::driver_status().available) {
      std::printf("no GPU: %s\n", kjit::driver_status().reason.c_str());
      return 77;
    }
    return mode == "launch" ? launch(main_ms) : modules(argc > 2 ? std::max(1, std::atoi(argv[2])) : 100,
                                                                  argc > 3 && std::strcmp(argv[3], "raw-first") == 0);
  } catch (const kjit::Error& e) {
    std::fprintf(stderr, "kjit: %s\n", e.what());
    return 1;
  }
}
