// Real libraries are cached (issue 36): the toolkit's CCCL copied as a vendored -I tree (CUB block
// and warp primitives, Thrust's device iterators, libcu++ containers and atomics) and CUTLASS-shaped header
// trees (a function-like macro building <cuda/std/x>, configuration macros naming a backend's
// folder as Thrust does, #if guards over absent headers, deep relative includes). Each program is
// compiled through the cache and by plain NVRTC on the same files and compared, then found again
// by a fresh Cache as a disk hit; an edit of a library header recompiles.
#include <boost/test/unit_test.hpp>

#include "fixture.hpp"

#include "rtc/compiler.hpp"

#include <mutex>
#include <regex>
#include <string>
#include <vector>

using namespace kjit::test;

namespace {

const kjit::Arch k_sm80 = kjit::Arch::parse("sm_80");

std::string toolkit()
{
  const std::string home = kjit::current_config().cuda_home;
  return home.empty() ? "/usr/local/cuda" : home;
}

// NVRTC names internal-linkage symbols with a suffix of its own per compile (`_INTERNAL_<hex>`);
// two plain compiles of one program differ there and nowhere else.
std::string without_internal_suffixes(const std::string& ptx)
{
  static const std::regex suffix("_INTERNAL_[0-9a-f]+");
  return std::regex_replace(ptx, suffix, "_INTERNAL_");
}

// kjit's log lines while it lives (its sink is called from kjit's threads too).
class LogCapture {
public:
  LogCapture()
  {
    kjit::set_log_sink([this](std::string_view line) { add(std::string(line)); });
  }
  ~LogCapture() { kjit::set_log_sink({}); }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;
  void add(const std::string& line)
  {
    std::lock_guard lock(m_mutex);
    m_text += "\n  " + line;
  }
  std::string text()
  {
    std::lock_guard lock(m_mutex);
    return m_text;
  }

private:
  std::mutex m_mutex;
  std::string m_text;
};

// The source at `src` compiled by the cache (a fresh Cache, as a new process) equals plain NVRTC's
// compile of the same files; a second fresh Cache finds it on disk. Returns the cached PTX.
std::string cached_equals_plain_and_hits(const kjit::Config& config, const std::string& src,
                                         const std::vector<std::string>& options)
{
  kjit::Program program = kjit::program_from_file(src);
  program.options = options;
  const kjit::Binary plain = kjit::rtc::compile(config, program, k_sm80);
  std::string ptx;
  // What the first Cache said and counted, shown when the second lookup is not a hit.
  LogCapture said;
  kjit::Config verbose = config;
  verbose.verbose = true;
  {
    kjit::Cache cache(verbose);
    const kjit::Lookup first = cache.lookup(program, k_sm80);
    BOOST_TEST(kjit::to_string(first.source) == std::string("compiled"), src);
    ptx = first.binary->ptx;
    BOOST_TEST(without_internal_suffixes(ptx) == without_internal_suffixes(plain.ptx), src);
    BOOST_TEST(first.binary->cubin.size() == plain.cubin.size(), src);
    BOOST_TEST(ptx.find("kjit-includes-") == std::string::npos, src);
    const kjit::CacheStats stats = cache.stats();
    said.add("first Cache: " + std::to_string(stats.compiles) + " compiles, " + std::to_string(stats.store_errors) +
             " store errors, uncached " + std::to_string(stats.uncached_probe) + " probe " +
             std::to_string(stats.uncached_names_file) + " names-file " + std::to_string(stats.uncached_disk_name) +
             " disk-name " + std::to_string(stats.uncached_formed_name) + " formed-name");
  }
  kjit::Cache again(config);
  const kjit::Lookup second = again.lookup(program, k_sm80);
  // What the store holds, said when it fails (a rare failure under load: which step, which keys).
  std::string stored;
  for (const auto& entry : again.entries()) {
    stored += " " + entry.key.substr(0, 12);
  }
  BOOST_TEST(kjit::to_string(second.source) == std::string("disk"),
             src << ": not cached (" << program.options.back() << "; " << kjit::to_string(second.source) << " under "
                 << again.prepare(program, k_sm80).key().substr(0, 12) << "; stored:" << stored << ")" << said.text());
  BOOST_TEST(second.binary->ptx == ptx, src);
  return ptx;
}

// The toolkit's CCCL copied once for the suite, as a project vendors a pinned version.
struct VendoredCccl {
  VendoredCccl()
  {
    std::string output;
    BOOST_TEST_REQUIRE(run("cp -r '" + toolkit() + "/include/cccl' '" + dir.path() + "/vendor' 2>&1", output) == 0,
                       output);
  }
  std::string vendor() const { return dir.path() + "/vendor"; }
  TempDir dir;
};

const VendoredCccl& vendored()
{
  static const VendoredCccl copy;
  return copy;
}

} // namespace

BOOST_FIXTURE_TEST_SUITE(library_corpus, CacheFixture)

BOOST_AUTO_TEST_CASE(cub_block_and_warp_primitives_from_a_vendored_cccl_are_cached)
{
  put(tmp.path() + "/block.cu", "#include <cub/block/block_reduce.cuh>\n"
                                "extern \"C\" __global__ void block_sum(const int* in, int* out) {\n"
                                "  using Reduce = cub::BlockReduce<int, 128>;\n"
                                "  __shared__ typename Reduce::TempStorage storage;\n"
                                "  const int sum = Reduce(storage).Sum(in[threadIdx.x]);\n"
                                "  if (threadIdx.x == 0) { *out = sum; }\n"
                                "}\n");
  put(tmp.path() + "/warp.cu", "#include <cub/warp/warp_reduce.cuh>\n#include <cub/warp/warp_scan.cuh>\n"
                               "extern \"C\" __global__ void warp_ops(const int* in, int* out) {\n"
                               "  __shared__ cub::WarpReduce<int>::TempStorage r;\n"
                               "  __shared__ cub::WarpScan<int>::TempStorage s;\n"
                               "  int x = in[threadIdx.x], prefix;\n"
                               "  cub::WarpScan<int>(s).ExclusiveSum(x, prefix);\n"
                               "  out[threadIdx.x] = prefix + cub::WarpReduce<int>(r).Sum(x);\n"
                               "}\n");
  for (const char* name : {"/block.cu", "/warp.cu"}) {
    cached_equals_plain_and_hits(config, tmp.path() + name, {"-I" + vendored().vendor(), "-std=c++17"});
  }
}

BOOST_AUTO_TEST_CASE(thrust_iterators_and_libcudacxx_from_a_vendored_cccl_are_cached)
{
  // Thrust's algorithms include <memory> (no NVRTC program can); its device-side iterators and
  // function objects are what a kernel uses.
  put(tmp.path() + "/thrust.cu", "#include <thrust/iterator/counting_iterator.h>\n"
                                 "#include <thrust/iterator/transform_iterator.h>\n"
                                 "#include <thrust/functional.h>\n#include <thrust/tuple.h>\n"
                                 "struct square { __device__ int operator()(int x) const { return x * x; } };\n"
                                 "extern \"C\" __global__ void sum_squares(int* out) {\n"
                                 "  auto squares = thrust::make_transform_iterator(thrust::counting_iterator<int>(0), square());\n"
                                 "  int total = 0;\n"
                                 "  for (int i = 0; i < 16; ++i) { total = thrust::plus<int>()(total, squares[i]); }\n"
                                 "  thrust::tuple<int, int> t(total, threadIdx.x);\n"
                                 "  out[threadIdx.x] = thrust::get<0>(t) + thrust::get<1>(t);\n"
                                 "}\n");
  put(tmp.path() + "/libcudacxx.cu", "#include <cuda/std/array>\n#include <cuda/std/optional>\n"
                                     "#include <cuda/std/span>\n#include <cuda/atomic>\n"
                                     "extern \"C\" __global__ void count(int* total, const int* in) {\n"
                                     "  cuda::std::array<int, 4> a{1, 2, 3, 4};\n"
                                     "  cuda::std::span<const int> s(in, 4);\n"
                                     "  cuda::std::optional<int> o = s[threadIdx.x % 4] > 2 ? "
                                     "cuda::std::optional<int>(a[1]) : cuda::std::nullopt;\n"
                                     "  cuda::atomic_ref<int, cuda::thread_scope_device> t(*total);\n"
                                     "  t.fetch_add(o.value_or(0), cuda::std::memory_order_relaxed);\n"
                                     "}\n");
  for (const char* name : {"/thrust.cu", "/libcudacxx.cu"}) {
    cached_equals_plain_and_hits(config, tmp.path() + name, {"-I" + vendored().vendor(), "-std=c++17"});
  }
}

// An edit inside the vendored tree recompiles, and the result is plain NVRTC's on the edited files.
BOOST_AUTO_TEST_CASE(an_edit_of_a_vendored_header_recompiles)
{
  const std::string vendor = tmp.path() + "/pinned";
  std::string output;
  BOOST_TEST_REQUIRE(run("cp -r '" + vendored().vendor() + "' '" + vendor + "' 2>&1", output) == 0, output);
  put(tmp.path() + "/k.cu", "#include <cuda/std/array>\n"
                            "extern \"C\" __global__ void k(int* o) { cuda::std::array<int, 3> a{}; *o = (int)a.size() + EXTRA; }\n");
  const std::string header = vendor + "/cuda/std/array";
  const std::string original = read_text(header);
  for (const int extra : {5151, 5152}) {
    write_text(header, original + "\n#define EXTRA " + std::to_string(extra) + "\n");
    settle();
    const std::string ptx = cached_equals_plain_and_hits(config, tmp.path() + "/k.cu", {"-I" + vendor});
    BOOST_TEST(ptx.find(std::to_string(3 + extra)) != std::string::npos);
  }
}

// A library shaped as CUTLASS is: its own macro builds <cuda/std/x>, a configuration macro names its
// backend's folder (Thrust's __THRUST_DEVICE_SYSTEM_ROOT), #if guards stand over headers that are
// absent, and headers deep in its tree include each other by relative names.
BOOST_AUTO_TEST_CASE(a_cutlass_shaped_library_is_cached_and_follows_edits)
{
  const std::string lib = tmp.path() + "/third_party/mylib/include";
  put(lib + "/mylib/mylib.h", "#pragma once\n"
                              "#define MYLIB_STD_HEADER(header) <cuda/std/header>\n"
                              "#ifndef MYLIB_BACKEND\n#define MYLIB_BACKEND MYLIB_BACKEND_CUDA\n#endif\n"
                              "#define MYLIB_BACKEND_CUDA 1\n"
                              "#if MYLIB_BACKEND == MYLIB_BACKEND_CUDA\n#define __MYLIB_BACKEND_NS cuda_impl\n"
                              "#else\n#define __MYLIB_BACKEND_NS host_impl\n#endif\n"
                              "#define __MYLIB_BACKEND_ROOT mylib/backend/__MYLIB_BACKEND_NS\n"
                              "#if __has_include(<mylib/optional_feature.h>)\n#include <mylib/optional_feature.h>\n#endif\n"
                              "#if 0\n#include \"never_there.h\"\n#endif\n");
  put(lib + "/mylib/numeric/types.h", "#pragma once\n#include \"../mylib.h\"\n#include MYLIB_STD_HEADER(cstdint)\n"
                                      "#include MYLIB_STD_HEADER(type_traits)\n"
                                      "namespace mylib { using index_t = cuda::std::int32_t; }\n");
  put(lib + "/mylib/gemm/kernel/detail/epilogue.h",
      "#pragma once\n#include \"../../../numeric/types.h\"\n#include \"../../../ops.h\"\n"
      "namespace mylib { __device__ inline index_t epilogue(index_t x) { return op(x) + SCALE; } }\n");
  put(lib + "/mylib/ops.h", "#pragma once\n#include \"mylib.h\"\n"
                            "#define __MYLIB_OPS_HEADER <__MYLIB_BACKEND_ROOT/ops.h>\n#include __MYLIB_OPS_HEADER\n");
  put(lib + "/mylib/backend/cuda_impl/ops.h", "#pragma once\n#define SCALE 7001\n"
                                              "namespace mylib { __device__ inline int op(int x) { return 3 * x; } }\n");
  put(lib + "/mylib/backend/host_impl/ops.h", "#pragma once\n#define SCALE 9\n"
                                              "namespace mylib { __device__ inline int op(int x) { return x; } }\n");
  const std::string src = tmp.path() + "/app/gemm.cu";
  put(src, "#include <mylib/gemm/kernel/detail/epilogue.h>\n"
           "extern \"C\" __global__ void gemm(int* o) { *o = mylib::epilogue(o[1]); }\n");
  settle();
  const std::vector<std::string> options{"-I" + lib, "-std=c++17"};
  BOOST_TEST(cached_equals_plain_and_hits(config, src, options).find("7001") != std::string::npos);
  // The backend's header (reached only through the configuration macros) is edited.
  put(lib + "/mylib/backend/cuda_impl/ops.h", "#pragma once\n#define SCALE 7002\n"
                                              "namespace mylib { __device__ inline int op(int x) { return 3 * x; } }\n");
  settle();
  BOOST_TEST(cached_equals_plain_and_hits(config, src, options).find("7002") != std::string::npos);
  // The optional header appears: the #if guard now includes it.
  put(lib + "/mylib/optional_feature.h", "#pragma once\n#define MYLIB_FEATURE 1\n");
  put(src, "#include <mylib/gemm/kernel/detail/epilogue.h>\n#ifndef MYLIB_FEATURE\n#error no feature\n#endif\n"
           "extern \"C\" __global__ void gemm(int* o) { *o = mylib::epilogue(o[1]); }\n");
  settle();
  BOOST_TEST(cached_equals_plain_and_hits(config, src, options).find("7002") != std::string::npos);
  // The configuration switches the backend by -D: the other folder's header.
  BOOST_TEST(cached_equals_plain_and_hits(config, src, {"-I" + lib, "-std=c++17", "-DMYLIB_BACKEND=2"}).find("7002") ==
             std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
