// The smallest embedding of kjit: compile (or fetch from the cache) a kernel for the current GPU
// and launch it. Copy this into an application. Usage: kjit_embed
#include <kjit/kjit.hpp>

#include <cstdio>
#include <vector>

int main()
{
  const kjit::Program program{
    "vector_add.cu",
    R"(extern "C" __global__ void vector_add(const float* a, const float* b, float* c, int n)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
})",
    {}, {}, {}};
  try {
    if (!kjit::driver_status().available) {
      // Without a GPU the cache still works: compile for an explicit arch.
      const auto binary = kjit::get(program, kjit::Arch::parse("sm_90"));
      std::printf("no GPU (%s); cached a %zu-byte sm_90 cubin\n", kjit::driver_status().reason.c_str(),
                  binary->cubin.size());
      return 0;
    }
    const kjit::Kernel kernel = kjit::get_kernel(program, "vector_add");  // compiled once, then cached
    const kjit::Context context = kjit::Context::current();
    const int n = 1 << 20;
    std::vector<float> a(n, 1.0f), b(n, 2.0f), c(n);
    kjit::DeviceBuffer da(context, n * sizeof(float)), db(context, n * sizeof(float)), dc(context, n * sizeof(float));
    da.upload(a.data(), n * sizeof(float));
    db.upload(b.data(), n * sizeof(float));
    const unsigned block = static_cast<unsigned>(kernel.max_potential_block_size().block);
    kernel.launch({{(n + block - 1) / block}, {block}}, da.pointer(), db.pointer(), dc.pointer(), n);
    kjit::synchronize(context);
    dc.download(c.data(), n * sizeof(float));
    std::printf("c[0] = %g, c[n-1] = %g (expected 3)\n", c[0], c[n - 1]);
    return c[0] == 3.0f && c[n - 1] == 3.0f ? 0 : 1;
  } catch (const kjit::Error& e) {
    std::fprintf(stderr, "kjit: %s\n", e.what());
    return 1;
  }
}
