// A separate process for the GPU tests: launches saxpy through get_kernel and reports what it
// had to compile and load. Prints "key: value" lines.
#include <kjit/kjit.hpp>

#include "util/dynamic_library.hpp"

#include <cstdio>
#include <vector>

int main()
{
  try {
    const kjit::Program program{"probe_saxpy.cu",
                                "extern \"C\" __global__ void saxpy(float a, const float* x, float* y, int n)\n"
                                "{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = a * x[i] + y[i]; }\n",
                                {},
                                {},
                                {}};
    const kjit::Kernel kernel = kjit::get_kernel(program, "saxpy");
    const kjit::Context context = kjit::Context::current();
    std::vector<float> x(256, 1.0f), y(256, 2.0f);
    kjit::DeviceBuffer dx(context, 1024), dy(context, 1024);
    dx.upload(x.data(), 1024);
    dy.upload(y.data(), 1024);
    kernel.launch({{1}, {256}}, 3.0f, dx.pointer(), dy.pointer(), 256);
    kjit::synchronize(context);
    dy.download(y.data(), 1024);
    const kjit::CacheStats stats = kjit::default_cache().stats();
    std::printf("result: %s\ncompiles: %llu\nnvrtc_loaded: %d\nnvjitlink_loaded: %d\n", y[255] == 5.0f ? "ok" : "wrong",
                static_cast<unsigned long long>(stats.compiles), kjit::util::library_is_loaded("libnvrtc") ? 1 : 0,
                kjit::util::library_is_loaded("libnvJitLink") ? 1 : 0);
    return 0;
  } catch (const kjit::Error& e) {
    std::printf("result: error\nmessage: %s\n", e.what());
    return 1;
  }
}
