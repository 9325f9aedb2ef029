// Issue 22's table, row by row: a cached result always equals an uncached compile of the files now.
#include <boost/test/unit_test.hpp>

#include "fixture.hpp"

#include "deps/include_scan.hpp"
#include "deps/resolver.hpp"
#include "cache/key.hpp"
#include "cache/toolkit_headers.hpp"
#include "rtc/compiler.hpp"
#include "store/store.hpp"

#include <chrono>
#include <cstdio>
#include <fcntl.h>
#include <sys/stat.h>
#include <thread>
#include <tuple>
#include <unistd.h>

using namespace kjit::test;

namespace {

const kjit::Arch k_arch = kjit::Arch::parse("compute_80");

void put(const std::string& path, const std::string& content)
{
  for (std::size_t at = path.find('/', 1); at != std::string::npos; at = path.find('/', at + 1)) {
    ::mkdir(path.substr(0, at).c_str(), 0700);
  }
  write_text(path, content);
}

// The value the kernel stores: the PTX's "mov.u32 %r1, N;" or "st.global.u32 [...], N;".
std::string value_in(const std::string& ptx)
{
  for (const char* marker : {"mov.u32 \t%r1, ", "mov.u32 \t%r2, ", "st.global.u32 \t[%rd2], ", "st.global.u32 \t[%rd1], "}) {
    const auto at = ptx.find(marker);
    if (at != std::string::npos) {
      const auto start = at + std::string(marker).size();
      return ptx.substr(start, ptx.find(';', start) - start);
    }
  }
  return "?";
}

// Plain NVRTC on the files as they are now: the source named by its path, the -I folders given.
std::string uncached(const kjit::Config& config, const std::string& source_path, const std::vector<std::string>& options)
{
  kjit::Program program{source_path, read_text(source_path), {}, options, {}};
  try {
    return kjit::rtc::compile(config, program, k_arch).ptx;
  } catch (const kjit::CompileError& e) {
    return "error";
  }
}

std::string cached(kjit::Cache& cache, const std::string& source_path, const std::vector<std::string>& options)
{
  kjit::Program program = kjit::program_from_file(source_path);
  program.options = options;
  try {
    return cache.get(program, k_arch)->ptx;
  } catch (const kjit::CompileError& e) {
    return "error";
  }
}

// One step: the cached result equals plain NVRTC on the files now, and holds the value expected.
void same_(const kjit::Config& config, kjit::Cache& cache, const std::string& src, const std::vector<std::string>& options,
           const std::string& expected)
{
  const std::string want = uncached(config, src, options);
  const std::string got = cached(cache, src, options);
  BOOST_TEST(value_in(got) == value_in(want));
  BOOST_TEST(value_in(want) == expected);
}

const char* k_kernel = "extern \"C\" __global__ void k(int* o) { *o = V; }\n";

} // namespace

BOOST_FIXTURE_TEST_SUITE(key_rows, CacheFixture)

BOOST_AUTO_TEST_CASE(row1_two_project_folders_same_source)
{
  const std::string a = tmp.path() + "/a", b = tmp.path() + "/b";
  put(a + "/k.cu", std::string("#include \"val.h\"\n") + k_kernel);
  put(b + "/k.cu", std::string("#include \"val.h\"\n") + k_kernel);
  put(a + "/val.h", "#define V 11\n");
  put(b + "/val.h", "#define V 22\n");
  settle();
  kjit::Cache cache(config);
  same_(config, cache, a + "/k.cu", {}, "11");
  same_(config, cache, b + "/k.cu", {}, "22");
}

BOOST_AUTO_TEST_CASE(row2_pre_include_edited)
{
  const std::string d = tmp.path() + "/p";
  put(d + "/k.cu", k_kernel);
  put(d + "/pre.h", "#define V 31\n");
  settle();
  const std::vector<std::string> options{"-include=" + d + "/pre.h"};
  {
    kjit::Cache cache(config);
    same_(config, cache, d + "/k.cu", options, "31");
  }
  put(d + "/pre.h", "#define V 32\n");
  settle();
  kjit::Cache cache(config);
  same_(config, cache, d + "/k.cu", options, "32");
}

BOOST_AUTO_TEST_CASE(row3_computed_includes)
{
  const std::string d = tmp.path() + "/c";
  put(d + "/cfg.h", "#define STR(x) #x\n#define XSTR(x) STR(x)\n#define CFG_HDR XSTR(NAME.h)\n");
  put(d + "/k.cu", std::string("#include \"cfg.h\"\n#include CFG_HDR\n") + k_kernel);
  put(d + "/one.h", "#define V 41\n");
  put(d + "/two.h", "#define V 42\n");
  settle();
  {
    kjit::Cache cache(config);
    same_(config, cache, d + "/k.cu", {"-DNAME=one"}, "41");
    same_(config, cache, d + "/k.cu", {"-DNAME=two"}, "42");
  }
  put(d + "/two.h", "#define V 43\n");
  settle();
  kjit::Cache cache(config);
  same_(config, cache, d + "/k.cu", {"-DNAME=two"}, "43");
}

BOOST_AUTO_TEST_CASE(row4_digraph_and_row5_digit_separator_and_row6_raw_string)
{
  const std::string d = tmp.path() + "/s";
  put(d + "/k.cu", std::string("%:include \"v.h\"\n"
                               "__device__ int f() { constexpr int big = 1'000; const char* s = \"'/*\"; return big + s[0]; }\n"
                               "#include \"w.h\"\n"
                               "__device__ const char* g() { return R\"x(\n#include \"nowhere.h\"\n)x\"; }\n") +
                     "extern \"C\" __global__ void k(int* o) { *o = V + W; }\n");
  put(d + "/v.h", "#define V 50\n");
  put(d + "/w.h", "#define W 1\n");
  settle();
  {
    kjit::Cache cache(config);
    same_(config, cache, d + "/k.cu", {}, "51");
  }
  put(d + "/v.h", "#define V 60\n");
  put(d + "/w.h", "#define W 2\n");
  settle();
  kjit::Cache cache(config);
  same_(config, cache, d + "/k.cu", {}, "62");
  const auto found = kjit::deps::scan_includes(read_text(d + "/k.cu"), {});
  BOOST_TEST(found.size() == 2u);
}

BOOST_AUTO_TEST_CASE(row7_include_next_between_two_folders)
{
  const std::string d = tmp.path() + "/n";
  put(d + "/first/cfg.h", "#include_next <cfg.h>\n#define V (BASE + 1)\n");
  put(d + "/second/cfg.h", "#define BASE 70\n");
  put(d + "/k.cu", std::string("#include <cfg.h>\n") + k_kernel);
  settle();
  const std::vector<std::string> options{"-I" + d + "/first", "-I" + d + "/second"};
  {
    kjit::Cache cache(config);
    same_(config, cache, d + "/k.cu", options, "71");
  }
  put(d + "/second/cfg.h", "#define BASE 80\n");
  settle();
  kjit::Cache cache(config);
  same_(config, cache, d + "/k.cu", options, "81");
}

BOOST_AUTO_TEST_CASE(row8_user_header_named_like_a_toolkit_header)
{
  const std::string d = tmp.path() + "/t";
  put(d + "/vector_types.h", "#define V 90\n");
  put(d + "/k.cu", std::string("#include <cuda_fp16.h>\n#include \"vector_types.h\"\n") + k_kernel);
  settle();
  kjit::Cache cache(config);
  same_(config, cache, d + "/k.cu", {}, "90");
}

BOOST_AUTO_TEST_CASE(row8_a_user_folder_file_that_a_toolkit_header_includes)
{
  // <cuda/std/cmath> includes <cuda_fp16.h>: nvcc and NVRTC take the -I folder's one first. Only
  // the toolkit header includes it, so no scanner of user files can predict it.
  const std::string d = tmp.path() + "/shadow";
  put(d + "/inc/cuda_fp16.h", "#define V 96\n#include_next <cuda_fp16.h>\n");
  put(d + "/k.cu", std::string("#include <cuda/std/cmath>\n") + k_kernel);
  settle();
  const std::vector<std::string> options{"-I" + d + "/inc", "-std=c++17"};
  {
    kjit::Cache cache(config);
    same_(config, cache, d + "/k.cu", options, "96");
  }
  put(d + "/inc/cuda_fp16.h", "#define V 97\n#include_next <cuda_fp16.h>\n");
  settle();
  kjit::Cache cache(config);
  same_(config, cache, d + "/k.cu", options, "97");
}

BOOST_AUTO_TEST_CASE(row8_a_vendored_tree_over_the_toolkits_reached_by_a_computed_include)
{
  // vend/cub/ over the toolkit's cub/: an include no scanner can follow must still take vend's.
  const std::string d = tmp.path() + "/vendored";
  put(d + "/vend/cub/version.cuh", "#define V 131\n#include_next <cub/version.cuh>\n");
  put(d + "/k.cu", std::string("#define H(x) <cub/x.cuh>\n#include H(version)\n") + k_kernel);
  settle();
  const std::vector<std::string> options{"-I" + d + "/vend", "-std=c++17"};
  {
    kjit::Cache cache(config);
    same_(config, cache, d + "/k.cu", options, "131");
  }
  put(d + "/vend/cub/version.cuh", "#define V 132\n#include_next <cub/version.cuh>\n");
  settle();
  kjit::Cache cache(config);
  same_(config, cache, d + "/k.cu", options, "132");
}

BOOST_AUTO_TEST_CASE(row9_toolkit_headers_are_in_the_key)
{
  // A toolkit tree of our own: the fingerprint changes when a header is replaced (as package
  // managers install: a new file renamed over the old one) or added, and it is in options.txt.
  const std::string tree = tmp.path() + "/toolkit/include";
  put(tree + "/cuda/std/h.h", "#define V 1\n");
  put(tree + "/top.h", "#define T 1\n");
  const auto store = kjit::store::Store::open(tmp.path() + "/store", 1 << 20);
  const std::string first = kjit::cache::toolkit_headers_fingerprint({tree}, store.get());
  BOOST_TEST(first.size() == 64u);
  BOOST_TEST(kjit::cache::toolkit_headers_fingerprint({tree}, store.get()) == first);  // kept: stats only
  put(tree + "/cuda/std/h.h.new", "#define V 2\n");
  BOOST_TEST_REQUIRE(std::rename((tree + "/cuda/std/h.h.new").c_str(), (tree + "/cuda/std/h.h").c_str()) == 0);
  const std::string replaced = kjit::cache::toolkit_headers_fingerprint({tree}, store.get());
  BOOST_TEST(replaced != first);
  put(tree + "/added.h", "\n");
  BOOST_TEST(kjit::cache::toolkit_headers_fingerprint({tree}, store.get()) != replaced);

  kjit::cache::KeyContext context;
  context.toolkit_headers = first;
  const kjit::Program program = small_program("row9");
  const auto before = kjit::cache::make_key(program, k_arch, context);
  context.toolkit_headers = replaced;
  const auto after = kjit::cache::make_key(program, k_arch, context);
  BOOST_TEST(before.options_txt.find("toolkit-headers: " + first) != std::string::npos);
  BOOST_TEST(before.hex() != after.hex());
  // A real Cache's key names the real toolkit's fingerprint.
  kjit::Cache cache(config);
  BOOST_TEST(cache.prepare(program, k_arch).options_txt().find("toolkit-headers: ") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(row10_header_rewritten_between_read_and_stat)
{
  const std::string d = tmp.path() + "/r";
  put(d + "/k.cu", std::string("#include \"val.h\"\n") + k_kernel);
  put(d + "/val.h", "#define V 100\n");
  settle();
  bool rewritten = false;
  kjit::deps::set_read_hook([&](const std::string& path) {
    if (!rewritten && path == d + "/val.h") {
      rewritten = true;
      write_text(path, "#define V 101\n");
    }
  });
  {
    kjit::Cache cache(config);
    const std::string got = cached(cache, d + "/k.cu", {});
    kjit::deps::set_read_hook({});
    BOOST_TEST(rewritten);
    BOOST_TEST(value_in(got) == "101");  // read again after the change
  }
  settle();
  kjit::Cache cache(config);
  same_(config, cache, d + "/k.cu", {}, "101");
}

BOOST_AUTO_TEST_CASE(issue11_item11_forged_mtime_is_seen_through_ctime)
{
  const std::string d = tmp.path() + "/f";
  put(d + "/k.cu", std::string("#include \"val.h\"\n") + k_kernel);
  put(d + "/val.h", "#define V 110\n");
  settle();
  struct stat before {};
  ::stat((d + "/val.h").c_str(), &before);
  {
    kjit::Cache cache(config);
    same_(config, cache, d + "/k.cu", {}, "110");
  }
  write_text(d + "/val.h", "#define V 111\n");  // same size
  const struct timespec times[2] = {before.st_atim, before.st_mtim};
  ::utimensat(AT_FDCWD, (d + "/val.h").c_str(), times, 0);
  settle();
  kjit::Cache cache(config);
  same_(config, cache, d + "/k.cu", {}, "111");
}

BOOST_AUTO_TEST_CASE(row11_a_cache_of_another_toolkit_is_refused_not_compiled_by_this_nvrtc)
{
  // Another toolkit location (the same files through links: another identity, another path).
  const std::string other = tmp.path() + "/cuda2";
  ::mkdir(other.c_str(), 0700);
  // The links go before the fixture's cleanup, which chmods what it removes (through links too).
  struct Unlink {
    std::string a, b;
    ~Unlink()
    {
      std::ignore = ::unlink(a.c_str());
      std::ignore = ::unlink(b.c_str());
    }
  } const links{other + "/include", other + "/lib64"};
  const std::string toolkit = kjit::current_config().cuda_home.empty() ? "/usr/local/cuda" : kjit::current_config().cuda_home;
  BOOST_TEST_REQUIRE(::symlink((toolkit + "/include").c_str(), links.a.c_str()) == 0);
  BOOST_TEST_REQUIRE(::symlink((toolkit + "/lib64").c_str(), links.b.c_str()) == 0);
  kjit::compile(small_program("row11"), k_arch);  // this process's NVRTC: the default toolkit's
  kjit::Config second = config;
  second.cuda_home = other;
  second.cache_dir = tmp.path() + "/cache2";
  BOOST_CHECK_THROW(kjit::Cache(second).get(small_program("row11b"), k_arch), kjit::ToolchainError);
}

BOOST_AUTO_TEST_CASE(row12_include_under_false_if_of_a_header_including_nothing_that_exists)
{
  const std::string d = tmp.path() + "/x";
  put(d + "/lib/core.h", "#if DEBUG_TRACE\n#include \"lib/core_io.h\"\n#endif\n#define V 120\n");
  put(d + "/lib/core_io.h", "#include <iostream_that_does_not_exist>\n");
  put(d + "/k.cu", std::string("#include <lib/core.h>\n") + k_kernel);
  settle();
  kjit::Cache cache(config);
  same_(config, cache, d + "/k.cu", {"-I" + d, "-DDEBUG_TRACE=0"}, "120");
}

BOOST_AUTO_TEST_CASE(issue10_quoted_includes_search_the_source_folder_not_the_cwd)
{
  const std::string d = tmp.path() + "/src";
  put(d + "/a.cu", std::string("#include \"x.h\"\n") + k_kernel);
  put(d + "/x.h", "#define V 7\n");
  settle();
  kjit::Cache cache(config);
  same_(config, cache, d + "/a.cu", {}, "7");
}

BOOST_AUTO_TEST_CASE(issue10_bad_include_folders_defines_and_nul_bytes_are_errors)
{
  put(tmp.path() + "/file.h", "\n");
  kjit::Cache cache(config);
  kjit::Program program{"k.cu", k_kernel, {}, {"-I" + tmp.path() + "/file.h"}, {}};
  BOOST_CHECK_THROW(cache.prepare(program, k_arch), kjit::OptionError);
  program.options = {"-I" + tmp.path() + "/missing"};
  BOOST_CHECK_EXCEPTION(cache.prepare(program, k_arch), kjit::OptionError, [&](const kjit::OptionError& e) {
    return std::string(e.what()).find(tmp.path() + "/missing") != std::string::npos;
  });
  program.options = {"-D", ""};
  BOOST_CHECK_EXCEPTION(cache.prepare(program, k_arch), kjit::OptionError,
                        [](const kjit::OptionError& e) { return std::string(e.what()).find("-D") != std::string::npos; });
  program.options = {};
  program.source = std::string("#define V 1\n") + '\0' + k_kernel;
  BOOST_CHECK_THROW(cache.prepare(program, k_arch), kjit::Error);
}

BOOST_AUTO_TEST_SUITE_END()
