// Include tracking costs: warm lookups with 1/20/200 user headers (stats only) and cold misses on
// real header trees (CUB, cuda/std) vendored as user headers. Public API only, so the same file
// measures older kjit versions. Usage: kjit_bench_includes [repetitions] [warm|cold|all]
#include <kjit/kjit.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

double now_ms()
{
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void write(const std::string& path, const std::string& text)
{
  std::ofstream(path) << text;
}

double median(std::vector<double> values)
{
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

kjit::Program headers_program(const std::string& dir, int count)
{
  std::string source;
  for (int i = 0; i < count; ++i) {
    write(dir + "/h" + std::to_string(i) + ".h", "#define H" + std::to_string(i) + " " + std::to_string(i) + "\n");
    source += "#include <h" + std::to_string(i) + ".h>\n";
  }
  source += "extern \"C\" __global__ void k(int* p) { *p = H0; }\n";
  return {"warm" + std::to_string(count) + ".cu", source, {}, {"-I" + dir}, {}};
}

void warm(const kjit::Config& config, const std::string& root, int repetitions)
{
  const kjit::Arch arch = kjit::Arch::parse("compute_80");
  for (int count : {1, 20, 200}) {
    const std::string dir = root + "/warm" + std::to_string(count);
    ::mkdir(dir.c_str(), 0700);
    const kjit::Program program = headers_program(dir, count);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // past the "too new" window
    kjit::Cache(config).get(program, arch);
    std::vector<double> fresh_cache;  // a new Cache: manifest read from the store, stats, store hit
    std::vector<double> same_cache;   // one Cache: manifest in memory, stats, memory hit
    kjit::Cache cache(config);
    cache.get(program, arch);
    for (int i = 0; i < repetitions; ++i) {
      kjit::Cache fresh(config);
      fresh.get(program, arch);  // toolchain context (first use) outside the timing
      const double t0 = now_ms();
      cache.get(program, arch);
      const double t1 = now_ms();
      same_cache.push_back((t1 - t0) * 1000.0);
    }
    for (int i = 0; i < repetitions; ++i) {
      kjit::Cache fresh(config);
      fresh.supported_archs();  // key context loaded outside the timing
      const double t0 = now_ms();
      fresh.get(program, arch);
      const double t1 = now_ms();
      fresh_cache.push_back((t1 - t0) * 1000.0);
    }
    std::printf("warm get, %3d headers: same Cache %8.1f us, new Cache %8.1f us (median of %d)\n", count,
                median(same_cache), median(fresh_cache), repetitions);
  }
}

void cold(const kjit::Config& config, const std::string& root)
{
  const std::string vendor = root + "/vendor";
  const std::string copy = "cp -r /usr/local/cuda/include/cccl '" + vendor + "'";
  if (std::system(copy.c_str()) != 0) {
    std::printf("cannot copy the CCCL tree\n");
    return;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const kjit::Arch arch = kjit::Arch::parse("compute_80");
  struct Case {
    const char* what;
    std::string source;
  };
  const std::string reduce = "template <int T> __global__ void r(const int* in, int* out) {\n"
                             "  using R = cub::BlockReduce<int, T>; __shared__ typename R::TempStorage t;\n"
                             "  int v = R(t).Sum(in[threadIdx.x]); if (threadIdx.x == 0) *out = v; }\n"
                             "template __global__ void r<128>(const int*, int*);\n";
  const std::vector<Case> cases{
    {"CUB block reduce", "#include <cub/block/block_reduce.cuh>\n" + reduce},
    {"CUB block reduce, computed include", "#define HDR <cub/block/block_reduce.cuh>\n#include HDR\n" + reduce},
    {"cuda/std complex+array", "#include <cuda/std/complex>\n#include <cuda/std/array>\n"
                               "__global__ void c(float* o) { cuda::std::array<cuda::std::complex<float>, 2> a{};"
                               " o[0] = a[0].real(); }\n"},
  };
  for (const Case& c : cases) {
    const kjit::Program program{"cold.cu", c.source, {}, {"-I" + vendor, "-std=c++17"}, {}};
    double plain = 1e9;
    double cached = 1e9;
    for (int i = 0; i < 2; ++i) {
      double t0 = now_ms();
      kjit::compile(program, arch);  // plain NVRTC reading the -I folder itself
      plain = std::min(plain, now_ms() - t0);
      kjit::Cache cache(config);
      cache.clear();
      cache.supported_archs();
      t0 = now_ms();
      cache.get(program, arch);
      cached = std::min(cached, now_ms() - t0);
    }
    std::printf("cold miss, %-36s plain NVRTC %7.1f ms, kjit %7.1f ms (+%.1f ms)\n", c.what, plain, cached,
                cached - plain);
  }
}

} // namespace

int main(int argc, char** argv)
{
  const int repetitions = argc > 1 ? std::atoi(argv[1]) : 200;
  char pattern[] = "/tmp/kjit-bench-includes-XXXXXX";
  const std::string root = ::mkdtemp(pattern);
  kjit::Config config = kjit::current_config();
  config.cache_dir = root + "/cache";
  config.mirror = false;
  const std::string only = argc > 2 ? argv[2] : "all";
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  if (only != "cold") {
    warm(config, root, repetitions);
  }
  if (only != "warm") {
    cold(config, root);
  }
  const std::string remove = "rm -rf '" + root + "'";
  return std::system(remove.c_str()) == 0 ? 0 : 1;
}
