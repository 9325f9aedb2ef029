// A separate process for the cache tests: looks one program up and reports what it had to load.
// Usage: cache_probe CACHE_DIR FILE ARCH [--as-nobody] [--threads N] [--start-file PATH] [--own-config]
//                    [--setenv NAME=VALUE]
//   --threads N: N threads look the program up at once (default 1).
//   --start-file PATH: prepare the program, then wait until PATH exists before looking it up, so
//   several processes can be released together (PATH.ready.<pid> says it is prepared).
//   --own-config: the Cache gets a Config the program made (its defaults), not the environment's.
//   --setenv NAME=VALUE: set in the environment after prepare() (the Cache's key context made),
//   before the lookup (that may load NVRTC).
//   --lookup: the (first) thread looks the program up by Cache::lookup(), not the prepared program's
//   get() (a first miss then speculates: compiled while its key is made).
// Prints "key: value" lines: result, memory_hits, disk_hits, misses, compiles, nvrtc_loaded,
// nvjitlink_loaded, writable, key, supported_archs.
#include <kjit/kjit.hpp>

#include "util/dynamic_library.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

int main(int argc, char** argv)
{
  if (argc < 4) {
    std::fprintf(stderr, "usage: cache_probe CACHE_DIR FILE ARCH [--as-nobody] [--threads N] [--start-file PATH]\n"
                         "                   [--own-config] [--setenv NAME=VALUE] [--second-cache] [--quick-exit]\n");
    return 2;
  }
  int threads = 1;
  std::string start_file;
  bool own_config = false;
  std::string late_variable;
  bool second_cache = false;  // a second Cache on the folder prepares the program after the first
  bool quick_exit = false;    // ends with std::quick_exit(0): no Cache is destroyed
  bool by_lookup = false;     // Cache::lookup() of the program, not get() of the prepared one
  for (int i = 4; i < argc; ++i) {
    if (std::strcmp(argv[i], "--as-nobody") == 0 && ::geteuid() == 0) {
      if (::setgid(65534) != 0 || ::setuid(65534) != 0) {
        std::perror("setuid");
        return 2;
      }
    } else if (std::strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
      threads = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--start-file") == 0 && i + 1 < argc) {
      start_file = argv[++i];
    } else if (std::strcmp(argv[i], "--own-config") == 0) {
      own_config = true;
    } else if (std::strcmp(argv[i], "--setenv") == 0 && i + 1 < argc) {
      late_variable = argv[++i];
    } else if (std::strcmp(argv[i], "--second-cache") == 0) {
      second_cache = true;
    } else if (std::strcmp(argv[i], "--quick-exit") == 0) {
      quick_exit = true;
    } else if (std::strcmp(argv[i], "--lookup") == 0) {
      by_lookup = true;
    }
  }
  try {
    kjit::Config config = own_config ? kjit::Config{} : kjit::current_config();
    config.cache_dir = argv[1];
    kjit::Cache cache(config);
    const kjit::PreparedProgram prepared = cache.prepare(kjit::program_from_file(argv[2]), kjit::Arch::parse(argv[3]));
    if (second_cache) {  // before this one looks anything up
      kjit::Cache second(config);
      std::fprintf(stderr, "second_key: %s\n",
                   second.prepare(kjit::program_from_file(argv[2]), kjit::Arch::parse(argv[3])).key().c_str());
    }
    if (!start_file.empty()) {
      std::FILE* ready = std::fopen((start_file + ".ready." + std::to_string(::getpid())).c_str(), "w");
      if (ready != nullptr) {
        std::fclose(ready);
      }
    }
    if (const auto equals = late_variable.find('='); equals != std::string::npos) {
      ::setenv(late_variable.substr(0, equals).c_str(), late_variable.substr(equals + 1).c_str(), 1);
    }
    while (!start_file.empty() && ::access(start_file.c_str(), F_OK) != 0) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    std::vector<std::string> results(static_cast<std::size_t>(threads), "ok");
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
      workers.emplace_back([&, t] {
        try {
          if (by_lookup && t == 0) {
            cache.lookup(kjit::program_from_file(argv[2]), kjit::Arch::parse(argv[3]));
          } else {
            cache.get(prepared);
          }
        } catch (const kjit::CompileError&) {
          results[t] = "compile-error";
        } catch (const kjit::Error& e) {
          results[t] = std::string("error ") + e.what();
        }
      });
    }
    for (auto& worker : workers) {
      worker.join();
    }
    std::string result = results[0];
    for (const auto& r : results) {
      if (r != result) {
        result = "mixed";
      }
    }
    std::string archs;  // remembered with the toolchain: asking must not load NVRTC
    for (int arch : cache.supported_archs()) {
      archs += (archs.empty() ? "" : " ") + std::to_string(arch);
    }
    const kjit::CacheStats stats = cache.stats();
    std::printf("result: %s\nmemory_hits: %llu\ndisk_hits: %llu\nmisses: %llu\ncompiles: %llu\n", result.c_str(),
                static_cast<unsigned long long>(stats.memory_hits), static_cast<unsigned long long>(stats.disk_hits),
                static_cast<unsigned long long>(stats.misses), static_cast<unsigned long long>(stats.compiles));
    std::printf("nvrtc_loaded: %d\nnvjitlink_loaded: %d\nwritable: %d\nkey: %s\nsupported_archs: %s\n",
                kjit::util::library_is_loaded("libnvrtc") ? 1 : 0,
                kjit::util::library_is_loaded("libnvJitLink") ? 1 : 0, cache.writable() ? 1 : 0,
                prepared.key().c_str(), archs.c_str());
    if (quick_exit) {
      std::fflush(stdout);
      std::quick_exit(0);
    }
  } catch (const kjit::Error& e) {
    std::printf("result: error\nmessage: %s\n", e.what());
    return 1;
  }
  return 0;
}
