// Where each lookup's binary came from and what this call took, apart from the compile that made it.
// Usage: kjit_lookup_outcome  (no GPU needed)
#include <kjit/kjit.hpp>

#include <cstdio>

int main()
{
  const kjit::Program program{"outcome.cu", "extern \"C\" __global__ void k(int* p) { *p = 1; }", {}, {}, {}};
  try {
    const kjit::Arch arch = kjit::Arch::parse("sm_90");
    kjit::Cache& cache = kjit::default_cache();
    // Compiled, then from memory; on a later run from disk twice (a disk hit enters the memory tier
    // on its second lookup), then from memory.
    for (int i = 0; i < 3; ++i) {
      const kjit::Lookup found = cache.lookup(program, arch);
      std::printf("%-8s in %8.3f ms; the compile that made it took %.1f ms\n", kjit::to_string(found.source),
                  found.lookup_ms, found.binary->timings.total_ms);
    }
    return 0;
  } catch (const kjit::Error& e) {
    std::fprintf(stderr, "kjit: %s\n", e.what());
    return 1;
  }
}
