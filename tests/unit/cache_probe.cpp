// A separate process for the cache tests: looks one program up and reports what it had to load.
// Usage: cache_probe CACHE_DIR FILE ARCH [--as-nobody]
// Prints "key: value" lines: result, memory_hits, disk_hits, compiles, nvrtc_loaded,
// nvjitlink_loaded, writable, log.
#include <kjit/kjit.hpp>

#include "util/dynamic_library.hpp"

#include <cstdio>
#include <cstring>
#include <unistd.h>

int main(int argc, char** argv)
{
  if (argc < 4) {
    std::fprintf(stderr, "usage: cache_probe CACHE_DIR FILE ARCH [--as-nobody]\n");
    return 2;
  }
  if (argc > 4 && std::strcmp(argv[4], "--as-nobody") == 0 && ::geteuid() == 0) {
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) {
      std::perror("setuid");
      return 2;
    }
  }
  try {
    kjit::Config config = kjit::current_config();
    config.cache_dir = argv[1];
    kjit::Cache cache(config);
    std::string result = "ok";
    try {
      cache.get(kjit::program_from_file(argv[2]), kjit::Arch::parse(argv[3]));
    } catch (const kjit::CompileError& e) {
      result = "compile-error";
    }
    const kjit::CacheStats stats = cache.stats();
    std::printf("result: %s\nmemory_hits: %llu\ndisk_hits: %llu\ncompiles: %llu\n", result.c_str(),
                static_cast<unsigned long long>(stats.memory_hits), static_cast<unsigned long long>(stats.disk_hits),
                static_cast<unsigned long long>(stats.compiles));
    std::printf("nvrtc_loaded: %d\nnvjitlink_loaded: %d\nwritable: %d\n",
                kjit::util::library_is_loaded("libnvrtc") ? 1 : 0,
                kjit::util::library_is_loaded("libnvJitLink") ? 1 : 0, cache.writable() ? 1 : 0);
  } catch (const kjit::Error& e) {
    std::printf("result: error\nmessage: %s\n", e.what());
    return 1;
  }
  return 0;
}
