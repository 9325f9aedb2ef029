// Module variables: read and write __device__/__constant__ variables by name or name expression.
// Usage: kjit_globals  (the GPU half runs with a device)
#include <kjit/kjit.hpp>

#include <array>
#include <cstdio>

namespace {

const kjit::Program k_program{"globals.cu",
                              R"(__constant__ float coeffs[4];
template <typename T> __device__ T total;
template __device__ int total<int>;
extern "C" __global__ void accumulate()
{
  atomicAdd(&total<int>, (int)coeffs[threadIdx.x & 3]);
})",
                              {},
                              {},
                              {"&total<int>"}};

} // namespace

int main()
{
  try {
    if (!kjit::driver_status().available) {
      const auto binary = kjit::get(k_program, kjit::Arch::parse("sm_90"));
      std::printf("no GPU (%s); total<int> is %s in the sm_90 cubin\n", kjit::driver_status().reason.c_str(),
                  binary->lowered_name("&total<int>").c_str());
      return 0;
    }
    const kjit::Context context = kjit::Context::current();
    kjit::Cache& cache = kjit::default_cache();
    const kjit::PreparedProgram prepared = cache.prepare(k_program);
    const kjit::Module module = context.load(prepared, *cache.get(prepared));
    module.set_global("coeffs", std::array<float, 4>{1, 2, 3, 4});
    module.set_global("total<int>", 0);
    module.kernel("accumulate").launch({{1}, {256}});
    kjit::synchronize(context);
    const int total = module.get_global<int>("total<int>");
    std::printf("total = %d (expected 640), %zu bytes at %#llx\n", total, module.global("total<int>").size,
                static_cast<unsigned long long>(module.global("total<int>").pointer));
    return total == 640 ? 0 : 1;
  } catch (const kjit::Error& e) {
    std::fprintf(stderr, "kjit: %s\n", e.what());
    return 1;
  }
}
