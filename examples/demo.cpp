// kjit's demo: compiles the example kernels for several archs through the cache (cold), then
// looks them all up again from a second, fresh process (warm) and shows what each step cost.
// Usage: kjit_demo [EXAMPLES_DIR] [--cache DIR]
#include "demo_gpu.hpp"
#include "demo_script.hpp"

#include <kjit/kjit.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

struct Example {
  const char* file;
  std::vector<std::string> name_expressions;
};

const Example k_examples[] = {
  {"saxpy.cu", {}},
  {"scale.cu", {"scale<float>", "scale<double>"}},
  {"half_axpy.cu", {}},
};
const char* const k_archs[] = {"sm_80", "sm_90", "sm_120"};

bool maps_contain(const char* fragment)
{
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.find(fragment) != std::string::npos) {
      return true;
    }
  }
  return false;
}

std::vector<kjit::Program> load_programs(const std::string& dir)
{
  std::vector<kjit::Program> programs;
  for (const Example& example : k_examples) {
    kjit::Program program = kjit::program_from_file(dir + "/" + example.file);
    program.name_expressions = example.name_expressions;
    programs.push_back(std::move(program));
  }
  return programs;
}

int cold(const std::string& dir, kjit::Config config, const char* self)
{
  std::printf("kjit %s\n", kjit::version());
  const kjit::DriverStatus& driver = kjit::driver_status();
  std::printf("driver: %s\n", driver.available ? "available" : ("unavailable: " + driver.reason).c_str());
  std::printf("cache: %s (cleared for a cold start)\n\n", config.cache_dir.c_str());
  kjit::Cache cache(config);
  cache.clear();
  if (driver.available) {
    // Cold time to first launch: compile, store, load and launch each example on this device.
    const auto start = std::chrono::steady_clock::now();
    kjit::option::cache_dir(config.cache_dir);
    const int failures = demo::launch_and_check(load_programs(dir));
    std::printf("  cold process: all launches checked after %.1f ms (compiles included)\n\n",
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    if (failures != 0) {
      return 1;
    }
  }
  std::printf("cold: every kernel compiled in-process (one NVRTC compile -> PTX and a whole-program cubin), then stored\n");
  std::printf("%-14s %-7s %8s %8s %9s %9s %9s %9s\n", "program", "arch", "ptx B", "cubin B", "load ms", "nvrtc ms",
              "link ms", "total ms");
  for (const kjit::Program& program : load_programs(dir)) {
    for (const char* arch_name : k_archs) {
      const kjit::Arch arch = kjit::Arch::parse(arch_name);
      const auto binary = cache.get(program, arch);
      std::string why;
      if (!kjit::check_cubin(binary->cubin, arch.number(), why)) {
        std::fprintf(stderr, "bad cubin for %s %s: %s\n", program.name.c_str(), arch_name, why.c_str());
        return 1;
      }
      const kjit::StageTimings& t = binary->timings;
      std::printf("%-14s %-7s %8zu %8zu %9.1f %9.1f %9.1f %9.1f\n", program.name.c_str(), arch_name, binary->ptx.size(),
                  binary->cubin.size(), t.load_ms, t.nvrtc_ms, t.link_ms, t.total_ms);
      for (const auto& [expression, lowered] : binary->lowered_names) {
        std::printf("    %s -> %s\n", expression.c_str(), lowered.c_str());
      }
    }
  }
  const kjit::CacheStats stats = cache.stats();
  std::printf("compiles: %llu, compile time %.1f ms; store: %s, %zu entries; mirror: %s/programs/\n\n",
              static_cast<unsigned long long>(stats.compiles), stats.compile_ms_spent, cache.store_path().c_str(),
              cache.disk_entries(), config.cache_dir.c_str());
  // The batch's workers: libkjit's own kjit-worker (the one beside the demo, else the one of its
  // build or installation; BatchOptions::worker_path).
  if (demo::show_script(cache, "") != 0) {
    return 1;
  }
  std::fflush(stdout);
  const std::string command = std::string("'") + self + "' '" + dir + "' --cache '" + config.cache_dir + "' --warm";
  return std::system(command.c_str()) == 0 ? 0 : 1;
}

int warm(const std::string& dir, const kjit::Config& config)
{
  const auto start = std::chrono::steady_clock::now();
  kjit::Cache cache(config);
  const std::vector<kjit::Program> programs = load_programs(dir);
  std::size_t kernels = 0;
  std::size_t bytes = 0;
  for (const kjit::Program& program : programs) {
    for (const char* arch_name : k_archs) {
      bytes += cache.get(program, kjit::Arch::parse(arch_name))->cubin.size();
      ++kernels;
    }
  }
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  const kjit::CacheStats stats = cache.stats();
  std::printf("warm: a second process looked up the same %zu kernels\n", kernels);
  std::printf("  %.3f ms in all (%.1f us per kernel, store open included), %zu cubin bytes\n", ms,
              1000.0 * ms / static_cast<double>(kernels), bytes);
  std::printf("  disk hits %llu, compiles %llu, compile time saved %.1f ms\n",
              static_cast<unsigned long long>(stats.disk_hits), static_cast<unsigned long long>(stats.compiles),
              stats.compile_ms_saved);
  std::printf("  NVRTC loaded: %s, nvJitLink loaded: %s\n", maps_contain("libnvrtc") ? "yes" : "no",
              maps_contain("libnvJitLink") ? "yes" : "no");
  if (!kjit::driver_status().available) {
    std::printf("\nno GPU here (%s): kernels were compiled and cached, not launched.\n",
                kjit::driver_status().reason.c_str());
    return stats.compiles == 0 ? 0 : 1;
  }
  // Time to first launch from this warm process: the kernel comes from the cache and is loaded.
  const auto before_launch = std::chrono::steady_clock::now();
  kjit::option::cache_dir(config.cache_dir);
  const int failures = demo::launch_and_check(programs);
  const double first_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::printf("  warm process: start to all launches checked %.1f ms (launch part %.1f ms); NVRTC loaded: %s\n",
              first_ms,
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - before_launch).count(),
              maps_contain("libnvrtc") ? "yes" : "no");
  return stats.compiles == 0 && failures == 0 ? 0 : 1;
}

} // namespace

int main(int argc, char** argv)
{
  std::string dir = "examples";
  bool is_warm = false;
  kjit::Config config;
  try {
    config = kjit::current_config();
    config.cache_dir = config.cache_dir + "/demo";
    for (int i = 1; i < argc; ++i) {
      if (std::strcmp(argv[i], "--warm") == 0) {
        is_warm = true;
      } else if (std::strcmp(argv[i], "--cache") == 0 && i + 1 < argc) {
        config.cache_dir = argv[++i];
      } else {
        dir = argv[i];
      }
    }
    char self[4096] = {};
    if (::readlink("/proc/self/exe", self, sizeof self - 1) < 0) {
      std::strcpy(self, argv[0]);
    }
    return is_warm ? warm(dir, config) : cold(dir, config, self);
  } catch (const kjit::Error& e) {
    std::fprintf(stderr, "demo failed: %s\n", e.what());
    return 1;
  }
}
