// Every C++ line the docs show (README.md and docs/*.md, ```cpp blocks), compiled as C++17 without a
// warning (a narrowing launch geometry once failed there) and, where no GPU is needed, run to check
// what the text around it says. The docs suite (test_docs.cpp) checks that each documented line is
// in this file, so an edited snippet is compiled here too. Usage: doc_snippets (makes its own cache
// and working folder under /tmp).
#include <kjit/kjit.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <tuple>
#include <stdexcept>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

int failures = 0;

void expect(bool ok, const char* what)
{
  if (!ok) {
    std::fprintf(stderr, "doc_snippets: not as documented: %s\n", what);
    ++failures;
  }
}

// README.md, "Usage": `source` is examples/scale.cu's text; the GPU half runs only with a device.
void readme_usage(const std::string& source, bool gpu, int n)
{
  const std::uint64_t device_pointer = 0;
kjit::Program program{"scale.cu", source, /*headers*/ {}, /*options*/ {"-DN=4", "-Iinclude"}, {"scale<float>"}};
  if (gpu) {
// Compile, cache (memory → LMDB → compile) and launch on the current GPU in one call:
kjit::Kernel scale = kjit::get_kernel(program, "scale<float>");
scale.launch({/*grid*/ {(unsigned(n) + 255) / 256}, /*block*/ {256}}, device_pointer, 2.0f, n);
  }
// Or just the cached binary for any arch, no GPU needed:
std::shared_ptr<const kjit::Binary> binary = kjit::get(program, kjit::Arch::parse("sm_90"));
// binary->cubin, binary->ptx, binary->lowered_name("scale<float>"), binary->log, binary->timings
  expect(!binary->cubin.empty() && binary->lowered_name("scale<float>") == "_Z5scaleIfEvPT_S0_i", "README: kjit::get");

// Or an uncached compile:
kjit::Binary fresh = kjit::compile(program, kjit::Arch::parse("sm_100"));
  expect(fresh.arch == "sm_100" && !fresh.cubin.empty(), "README: kjit::compile");

// Named construction and typed options; a lookup that says where its binary came from:
kjit::CompileOptions options;
options.defines = {{"N", "4"}};
options.include_dirs = {"include"};
auto named = kjit::Program::from_file("scale.cu").with(options).name_expression("scale<float>");
kjit::Lookup found = kjit::default_cache().lookup(named, kjit::Arch::parse("sm_90"));
// found.source: memory, disk, bundle, compiled…; found.lookup_ms: this call
  // docs/embedding.md: typed options give the key of the same raw strings, so `program`'s binary.
  expect(found.source == kjit::Source::memory && found.binary == binary, "README: typed options, same key");
  if (gpu) {
// Load any Binary, cubin/fatbin/PTX bytes or file; module variables; clusters, cooperative launches:
kjit::Module module = kjit::Context::current().load_file("kernels.sm_90.cubin");
int counter = module.get_global<int>("counter");
    (void)counter;
  }
}

// docs/embedding.md, "Loading what the application has" (compiled only: it needs a device).
[[maybe_unused]] void embedding_load_any(const kjit::Program& program, const kjit::Arch& arch, const std::string& bytes)
{
const kjit::Context context = kjit::Context::current();
kjit::Module a = context.load(kjit::compile(program, arch));          // any Binary: cubin, else PTX
kjit::Module b = context.load_file("kernels/gemm.sm_90.cubin");       // a file the app ships
kjit::Module c = context.load_image(bytes, {"embedded gemm"});        // cubin, fatbin or PTX bytes
}

// docs/embedding.md, "Module variables" (compiled only).
[[maybe_unused]] void embedding_globals(kjit::Cache& cache, const kjit::PreparedProgram& prepared,
                                        const kjit::Context& context)
{
kjit::Module module = context.load(prepared, *cache.get(prepared));
int answer = module.get_global<int>("answer");
module.set_global("coeffs", std::array<float, 4>{1, 2, 3, 4});
kjit::Global g = module.global("&table<int>");  // a template instance: add "&table<int>" to
                                                 // Program::name_expressions; '&' is optional here
  (void)answer;
  (void)g;
}

// docs/embedding.md, "Launch kinds, occupancy and kernel attributes" (compiled only).
[[maybe_unused]] void embedding_launch_kinds(const kjit::Kernel& kernel, int blocks, std::uint64_t data, int n)
{
kjit::LaunchConfig config;
config.block = {256};
config.cooperative = true;                               // grid.sync() in the kernel
config.grid = {static_cast<unsigned>(std::min(blocks, kernel.max_cooperative_grid(256)))};
kernel.launch(config, data, n);
auto best = kernel.max_potential_block_size([](int block) { return block * sizeof(float); });
  (void)best;
}

// docs/embedding.md, "Launch kinds, occupancy and kernel attributes": streams and events (compiled only).
[[maybe_unused]] float embedding_streams(const kjit::Context& context, const kjit::Kernel& kernel, kjit::LaunchConfig config,
                                         std::uint64_t data, int n)
{
kjit::Stream stream(context);
kjit::Event start(context), end(context);
config.stream = stream.handle();
start.record(stream);
kernel.launch(config, data, n);
end.record(stream);
float ms = kjit::elapsed_ms(start, end);
  return ms;
}

// docs/embedding.md, "Typed options and named construction".
kjit::Program embedding_typed_options()
{
kjit::CompileOptions options;
options.standard = "c++17";
options.defines = {{"TILE", "128"}};
options.include_dirs = {"include"};
options.fast_math = true;
options.max_registers = 64;
auto program = kjit::Program::from_file("kernels/gemm.cu").with(options).name_expression("gemm<float>");
  return program;
}

// docs/scripts.md, "A worked example", and the dispatch table it shows.
void scripts_worked_example()
{
kjit::Cache cache(kjit::current_config());
kjit::Script script;
script.name = "TileScale";
script.source = R"(
template <int BLOCK, int UNROLL>
__global__ void tile(float* p, int n) {
  const int base = (blockIdx.x * BLOCK + threadIdx.x) * UNROLL;
  for (int u = 0; u < UNROLL; ++u) if (base + u < n) p[base + u] *= 2.0f;
})";
script.space = {{"BLOCK", {"64", "128", "256"}}, {"UNROLL", {"1", "2"}}};
script.name_expression = "tile<{BLOCK},{UNROLL}>";
script.arch = kjit::Arch::parse("sm_90");
kjit::BuiltScript built = script.build(cache);   // six programs, one batch
  expect(built.schedules().size() == 6 && built.schedules()[0].kernel == "tile<64,1>", "scripts.md: six schedules");

// No GPU: a cost model picks. (On a GPU, set tuning.timer to launch built.kernel(i, context) and
// wait; the median of the repeats decides.)
kjit::TuningOptions tuning;
tuning.cost = [](const kjit::ScheduleInfo& s, const std::vector<std::uint64_t>& key) {
  // Waves of blocks over 132 SMs, each a fixed overhead plus its tile's work.
  const double tile = std::stod(s.values[0].second) * std::stod(s.values[1].second);
  return std::ceil(std::ceil(key[0] / tile) / 132) * (tile / 64 + 4);
};
built.set_tuning(tuning);
auto binary = built.dispatch({1000});  // key 1024: tuned (tile<64,1>), stored, mirrored
auto same = built.dispatch({1010});    // key 1024 again: from the table
  expect(binary == built.binary(0) && same == binary, "scripts.md: 1000 and 1010 dispatch to tile<64,1>");
  for (const std::uint64_t n : {20000ull, 100000ull, 50000000ull}) {
    built.dispatch({n});
  }
  // The table the text shows: 1024 → 0, 20480 → 3, 114688 → 5, 50331648 → 5.
  const std::vector<std::pair<std::uint64_t, std::size_t>> shown = {{1024, 0}, {20480, 3}, {114688, 5}, {50331648, 5}};
  std::vector<std::pair<std::uint64_t, std::size_t>> table;
  for (const kjit::DispatchEntry& row : built.table()) {
    table.emplace_back(row.key.at(0), row.choice);
  }
  expect(table == shown, "scripts.md: the dispatch table");
}

} // namespace

int main()
{
  char folder[] = "/tmp/kjit-doc-snippets-XXXXXX";
  if (::mkdtemp(folder) == nullptr) {
    std::perror("doc_snippets: mkdtemp");
    return 1;
  }
  // The snippets run in a child, so that its caches (the process-wide one included) are gone
  // before the folder is removed.
  const pid_t child = ::fork();
  if (child == 0) {
    try {
      if (::chdir(folder) != 0 || ::mkdir("include", 0700) != 0) {
        throw std::runtime_error("cannot set up the working folder");
      }
      kjit::option::cache_dir(std::string(folder) + "/cache");
      std::ofstream("scale.cu") << "template <typename T>\n__global__ void scale(T* x, T a, int n)\n{\n"
                                   "  const int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) {\n"
                                   "    x[i] *= a;\n  }\n}\n";
      readme_usage(kjit::program_from_file("scale.cu").source, kjit::driver_status().available, 1 << 20);
      std::ignore = embedding_typed_options;
      scripts_worked_example();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "doc_snippets: %s\n", e.what());
      ++failures;
    }
    std::exit(failures == 0 ? 0 : 1);
  }
  int status = 0;
  const bool waited = child > 0 && ::waitpid(child, &status, 0) == child;
  const int removed = std::system(("rm -rf '" + std::string(folder) + "'").c_str());
  return waited && WIFEXITED(status) && WEXITSTATUS(status) == 0 && removed == 0 ? 0 : 1;
}
