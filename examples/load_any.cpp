// Loading what an application has, not only cached programs: an uncached kjit::compile() result,
// a cubin file it ships, raw image bytes. Usage: kjit_load_any  (the GPU half runs with a device)
#include <kjit/kjit.hpp>

#include <cstdio>
#include <fstream>
#include <vector>

namespace {

const kjit::Program k_program{"double_it.cu",
                              R"(extern "C" __global__ void double_it(float* x, int n)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= 2.0f;
})",
                              {}, {}, {}};

} // namespace

int main()
{
  try {
    if (!kjit::driver_status().available) {
      // Without a GPU: build an image to ship, and see that a bad one is refused before any driver call.
      const kjit::Binary binary = kjit::compile(k_program, kjit::Arch::parse("sm_90"));
      std::ofstream("double_it.sm_90.cubin", std::ios::binary) << binary.cubin;
      std::printf("no GPU (%s); wrote double_it.sm_90.cubin (%zu bytes)\n", kjit::driver_status().reason.c_str(),
                  binary.cubin.size());
      return 0;
    }
    const kjit::Context context = kjit::Context::current();
    const int cc = context.compute_capability();
    const kjit::Binary binary = kjit::compile(k_program, kjit::Arch::of_compute_capability(cc / 10, cc % 10));
    const std::string file = "double_it." + binary.arch + ".cubin";
    std::ofstream(file, std::ios::binary) << binary.cubin;

    const kjit::Module from_binary = context.load(binary);           // the Binary itself
    const kjit::Module from_file = context.load_file(file);          // a file next to the application
    const kjit::Module from_ptx = context.load_image(binary.ptx, {"double_it PTX"});  // JIT-compiled by the driver
    const int n = 1000;
    std::vector<float> x(n, 1.0f);
    kjit::DeviceBuffer buffer(context, n * sizeof(float));
    buffer.upload(x.data(), n * sizeof(float));
    for (const kjit::Module* module : {&from_binary, &from_file, &from_ptx}) {
      module->kernel("double_it").launch({{(n + 255) / 256}, {256}}, buffer.pointer(), n);
    }
    kjit::synchronize(context);
    buffer.download(x.data(), n * sizeof(float));
    std::printf("x[0] = %g (expected 8: doubled by each of the %s, file and PTX modules)\n", x[0],
                from_binary.image_kind().c_str());
    return x[0] == 8.0f ? 0 : 1;
  } catch (const kjit::Error& e) {
    std::fprintf(stderr, "kjit: %s\n", e.what());
    return 1;
  }
}
