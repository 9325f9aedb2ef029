// Meson consumer: compiles and caches a kernel through kjit used as a subproject (C++17).
#include <kjit/kjit.hpp>

#include <cstdio>

int main()
{
  try {
    kjit::Cache cache;
    const kjit::Program program{"consumer.cu", "extern \"C\" __global__ void consumer(int* p) { *p = 42; }\n",
                                {}, {}, {}};
    const auto first = cache.get(program, kjit::Arch::parse("sm_90"));
    const auto again = cache.get(program, kjit::Arch::parse("sm_90"));
    std::string why;
    if (!kjit::check_cubin(first->cubin, 90, why) || first != again) {
      std::fprintf(stderr, "consumer: bad result: %s\n", why.c_str());
      return 1;
    }
    std::printf("meson consumer ok: kjit %s, %zu-byte cubin, %llu memory hit\n", kjit::version(), first->cubin.size(),
                static_cast<unsigned long long>(cache.stats().memory_hits));
    return 0;
  } catch (const kjit::Error& e) {
    std::fprintf(stderr, "consumer: %s\n", e.what());
    return 1;
  }
}
