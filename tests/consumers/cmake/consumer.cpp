// CMake consumer: compiles a kernel with an installed kjit found through find_package.
#include <kjit/kjit.hpp>

#include <cstdio>

int main()
{
  try {
    const kjit::Binary binary = kjit::compile(
      {"cmake_consumer.cu", "extern \"C\" __global__ void k(float* x) { x[threadIdx.x] *= 2.0f; }\n", {}, {}, {}},
      kjit::Arch::parse("sm_80"));
    std::string why;
    if (!kjit::check_cubin(binary.cubin, 80, why)) {
      std::fprintf(stderr, "cmake consumer: %s\n", why.c_str());
      return 1;
    }
    std::printf("cmake consumer ok: kjit %s, %zu-byte cubin\n", kjit::version(), binary.cubin.size());
    return 0;
  } catch (const kjit::Error& e) {
    std::fprintf(stderr, "cmake consumer: %s\n", e.what());
    return 1;
  }
}
