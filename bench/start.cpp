// Section [9]'s programs linked to libkjit through its public API only, as an application is:
//   kjit_bench_start            loads libkjit and exits (the cost of loading it and its dependencies);
//   kjit_bench_start hit DIR NAME SOURCE
//                               opens a Cache on DIR and gets the cubin of the program (NAME, SOURCE)
//                               for sm_90, a cached kernel: exits 0 on a disk hit, 3 otherwise;
//   kjit_bench_start check DIR NAME SOURCE
//                               the same, then prints what it got and whether a compiler was loaded.
#include <kjit/kjit.hpp>

#include <cstdio>
#include <cstring>
#include <string>

namespace {

// True if a library whose path contains `fragment` is mapped in this process.
bool mapped(const char* fragment)
{
  std::FILE* maps = std::fopen("/proc/self/maps", "r");
  bool found = false;
  char line[4096];
  while (maps != nullptr && !found && std::fgets(line, sizeof line, maps) != nullptr) {
    found = std::strstr(line, fragment) != nullptr;
  }
  if (maps != nullptr) {
    std::fclose(maps);
  }
  return found;
}

} // namespace

int main(int argc, char** argv)
{
  if (argc == 1) {
    return 0;
  }
  const bool check = argc == 5 && std::strcmp(argv[1], "check") == 0;
  if (argc != 5 || (!check && std::strcmp(argv[1], "hit") != 0)) {
    std::fprintf(stderr, "usage: kjit_bench_start [hit|check DIR NAME SOURCE]\n");
    return 2;
  }
  try {
    kjit::Config config = kjit::current_config();
    config.cache_dir = argv[2];
    config.mirror = false;
    kjit::Cache cache(config);
    const auto binary = cache.get(kjit::Program{argv[3], argv[4], {}, {}, {}}, kjit::Arch::parse("sm_90"));
    const kjit::CacheStats stats = cache.stats();
    if (!check) {
      return stats.disk_hits == 1 && stats.compiles == 0 && !binary->cubin.empty() ? 0 : 3;
    }
    std::printf("cubin_bytes: %zu\ndisk_hits: %llu\ncompiles: %llu\nnvrtc_loaded: %d\nnvjitlink_loaded: %d\n",
                binary->cubin.size(), static_cast<unsigned long long>(stats.disk_hits),
                static_cast<unsigned long long>(stats.compiles), mapped("libnvrtc") ? 1 : 0,
                mapped("libnvJitLink") ? 1 : 0);
    return 0;
  } catch (const kjit::Error& e) {
    std::fprintf(stderr, "kjit_bench_start: %s\n", e.what());
    return 1;
  }
}
