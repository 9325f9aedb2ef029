// Issue 22's table, row by row: a cached result always equals an uncached compile of the files now.
#include <boost/test/unit_test.hpp>

#include "cache/named_copy.hpp"
#include "fixture.hpp"

#include "deps/include_scan.hpp"
#include "deps/resolver.hpp"
#include "cache/key.hpp"
#include "cache/named_copy.hpp"
#include "deps/toolkit_headers.hpp"
#include "rtc/compiler.hpp"
#include "store/store.hpp"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <cstdio>
#include <fcntl.h>
#include <limits>
#include <ctime>
#include <sys/stat.h>
#include <thread>
#include <tuple>
#include <unistd.h>

using namespace kjit::test;

namespace {

const kjit::Arch k_arch = kjit::Arch::parse("compute_80");

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

// d/k.cu computes V + W from d/v.h and d/w.h: first V = v1, W = 1, then (in a new Cache) V = v2, W = 2.
void v_and_w_edited(const kjit::Config& config, const std::string& d, int v1, int v2)
{
  for (int step = 1; step <= 2; ++step) {
    const int v = step == 1 ? v1 : v2;
    put(d + "/v.h", "#define V " + std::to_string(v) + "\n");
    put(d + "/w.h", "#define W " + std::to_string(step) + "\n");
    settle();
    kjit::Cache cache(config);
    same_(config, cache, d + "/k.cu", {}, std::to_string(v + step));
  }
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
  v_and_w_edited(config, d, 50, 60);
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
  const std::string first = kjit::deps::toolkit_headers_fingerprint({tree}, store.get());
  BOOST_TEST(first.size() == 64u);
  BOOST_TEST(kjit::deps::toolkit_headers_fingerprint({tree}, store.get()) == first);  // kept: stats only
  put(tree + "/cuda/std/h.h.new", "#define V 2\n");
  BOOST_TEST_REQUIRE(std::rename((tree + "/cuda/std/h.h.new").c_str(), (tree + "/cuda/std/h.h").c_str()) == 0);
  const std::string replaced = kjit::deps::toolkit_headers_fingerprint({tree}, store.get());
  BOOST_TEST(replaced != first);
  put(tree + "/added.h", "\n");
  BOOST_TEST(kjit::deps::toolkit_headers_fingerprint({tree}, store.get()) != replaced);

  kjit::cache::KeyContext context;
  context.toolkit_headers = first;
  // A program that may include a toolkit header (one without any include reads none: its key
  // leaves the fingerprint out, suite toolkit_in_keys).
  kjit::Program program = small_program("row9");
  program.source = "#include <cuda_fp16.h>\n" + program.source;
  const auto before = kjit::cache::make_key_texts(program, k_arch, context);
  context.toolkit_headers = replaced;
  const auto after = kjit::cache::make_key_texts(program, k_arch, context);
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

// Issue 22, differential review: a wrong prediction that still finds *some* copied file must never
// change what NVRTC reads. Each test compares the cached result with plain NVRTC on the real files.

BOOST_AUTO_TEST_CASE(review1_include_next_from_a_header_found_through_the_source_folder)
{
  const std::string d = tmp.path() + "/nx1";
  put(d + "/src/k.cu", std::string("#include \"h.h\"\n") + k_kernel);
  put(d + "/src/h.h", "#ifndef SRC_H\n#define SRC_H\n#include_next \"h.h\"\n#endif\n");
  put(d + "/a/h.h", "#ifndef A_H\n#define A_H\n#define V 201\n#endif\n");
  put(d + "/b/h.h", "#ifndef B_H\n#define B_H\n#define V 202\n#endif\n");
  settle();
  // NVRTC's next search from a file found next to its includer starts at the first -I folder,
  // whether or not the source folder is an -I folder too.
  const std::string a = "-I" + d + "/a", b = "-I" + d + "/b", src = "-I" + d + "/src";
  for (const auto& options : {std::vector<std::string>{b, a}, std::vector<std::string>{a, src, b},
                              std::vector<std::string>{a, b, src}, std::vector<std::string>{b, src, a}}) {
    const std::string want = value_in(uncached(config, d + "/src/k.cu", options));
    BOOST_TEST(want == (options.front() == a ? "201" : "202"));
    kjit::Cache cache(config);
    same_(config, cache, d + "/src/k.cu", options, want);
  }
}

BOOST_AUTO_TEST_CASE(review1_include_next_from_a_header_found_through_its_includers_folder)
{
  const std::string d = tmp.path() + "/nx2";
  put(d + "/src/k.cu", std::string("#include <x.h>\n") + k_kernel);
  put(d + "/b/x.h", "#include \"y.h\"\n");
  put(d + "/b/y.h", "#ifndef BY\n#define BY\n#include_next <y.h>\n#endif\n");
  put(d + "/a/y.h", "#ifndef AY\n#define AY\n#define V 211\n#endif\n");
  put(d + "/c/y.h", "#ifndef CY\n#define CY\n#define V 212\n#endif\n");
  settle();
  const std::vector<std::string> options{"-I" + d + "/a", "-I" + d + "/b", "-I" + d + "/c"};
  const std::string want = value_in(uncached(config, d + "/src/k.cu", options));
  BOOST_TEST(want != "?");
  kjit::Cache cache(config);
  same_(config, cache, d + "/src/k.cu", options, want);
}

BOOST_AUTO_TEST_CASE(review1_include_next_from_the_main_source)
{
  const std::string d = tmp.path() + "/nx3";
  put(d + "/src/k.cu", std::string("#include_next <v.h>\n") + k_kernel);
  put(d + "/src/v.h", "#define V 221\n");
  put(d + "/a/v.h", "#define V 222\n");
  put(d + "/b/v.h", "#define V 223\n");
  settle();
  for (const auto& options : {std::vector<std::string>{"-I" + d + "/a", "-I" + d + "/b"},
                              std::vector<std::string>{"-I" + d + "/src", "-I" + d + "/b"}}) {
    const std::string want = value_in(uncached(config, d + "/src/k.cu", options));
    BOOST_TEST(want != "?");
    kjit::Cache cache(config);
    same_(config, cache, d + "/src/k.cu", options, want);
  }
}

BOOST_AUTO_TEST_CASE(review1_include_next_from_a_pre_include_found_in_a_middle_folder)
{
  const std::string d = tmp.path() + "/nx4";
  put(d + "/src/k.cu", k_kernel);
  put(d + "/b/pre.h", "#include_next <v.h>\n");
  put(d + "/a/v.h", "#define V 231\n");
  put(d + "/c/v.h", "#define V 233\n");
  settle();
  const std::vector<std::string> options{"-I" + d + "/a", "-I" + d + "/b", "-I" + d + "/c", "-include=pre.h"};
  kjit::Cache cache(config);
  same_(config, cache, d + "/src/k.cu", options, "233");
}

BOOST_AUTO_TEST_CASE(review2_has_include_through_a_macro_or_a_define)
{
  const std::string d = tmp.path() + "/hi";
  put(d + "/opt.h", "#define OPT_V 1\n");
  put(d + "/k1.cu", std::string("#define S(x) #x\n#define H S(opt.h)\n#if __has_include(H)\n#define V 241\n#else\n#define V 240\n#endif\n") + k_kernel);
  put(d + "/k2.cu", std::string("#if __has_include(OPT)\n#define V 242\n#else\n#define V 240\n#endif\n") + k_kernel);
  put(d + "/k3.cu", std::string("#define HAS(x) __has_include(x)\n#if HAS(\"opt.h\")\n#define V 243\n#else\n#define V 240\n#endif\n") + k_kernel);
  settle();
  kjit::Cache cache(config);
  same_(config, cache, d + "/k1.cu", {}, "241");
  same_(config, cache, d + "/k2.cu", {"-DOPT=\"opt.h\""}, "242");
  same_(config, cache, d + "/k3.cu", {}, "243");
  std::remove((d + "/opt.h").c_str());
  settle();
  same_(config, cache, d + "/k1.cu", {}, "240");
  same_(config, cache, d + "/k2.cu", {"-DOPT=\"opt.h\""}, "240");
  same_(config, cache, d + "/k3.cu", {}, "240");
}

// A review (2026-11-29): a macro standing for __has_include itself (an alias, a chain of them, a
// function-like macro calling one) made probes kjit never saw: opt.h was not passed and the probe
// was false (240) where NVRTC's on disk is true (241-243), stored and hit. Such a program is now
// compiled from the disk, as a probe kjit can't follow is.
BOOST_AUTO_TEST_CASE(a_macro_standing_for_has_include_is_compiled_from_the_disk)
{
  const std::string d = tmp.path() + "/alias";
  put(d + "/lib/opt.h", "#define OPT_V 1\n");
  put(d + "/lib/a.h", "#pragma once\n#define HI __has_include\n#define HI2 HI\n#define W(x) HI(x)\n");
  const auto source = [](const std::string& probe, const std::string& yes) {
    return "#include \"a.h\"\n#if " + probe + "(\"opt.h\")\n#define V " + yes + "\n#else\n#define V 240\n#endif\n" + k_kernel;
  };
  put(d + "/k1.cu", source("HI", "241"));
  put(d + "/k2.cu", source("HI2", "242"));
  put(d + "/k3.cu", source("W", "243"));
  settle();
  kjit::Cache cache(config);
  const std::vector<std::string> options{"-I" + d + "/lib"};
  same_(config, cache, d + "/k1.cu", options, "241");
  same_(config, cache, d + "/k2.cu", options, "242");
  same_(config, cache, d + "/k3.cu", options, "243");
  BOOST_TEST(cache.stats().uncached_probe >= 3u);
  // A macro that calls __has_include is followed as before, and cached.
  put(d + "/k4.cu", std::string("#define HAS_OPT __has_include(\"opt.h\")\n#if HAS_OPT\n#define V 244\n#else\n"
                                "#define V 240\n#endif\n") + k_kernel);
  settle();
  same_(config, cache, d + "/k4.cu", options, "244");
  kjit::Cache fresh(config);
  kjit::Program k4 = kjit::program_from_file(d + "/k4.cu");
  k4.options = options;
  BOOST_TEST(kjit::to_string(fresh.lookup(k4, k_arch).source) == std::string("disk"));
}

BOOST_AUTO_TEST_CASE(review3_one_file_by_two_names_with_pragma_once)
{
  const std::string d = tmp.path() + "/once";
  put(d + "/a/h.h", "#pragma once\nstruct S { int v; };\n#define V 251\n");
  BOOST_TEST_REQUIRE(::link((d + "/a/h.h").c_str(), (d + "/a/hard.h").c_str()) == 0);
  BOOST_TEST_REQUIRE(::symlink("a", (d + "/b").c_str()) == 0);
  put(d + "/k1.cu", std::string("#include \"a/h.h\"\n#include \"a/hard.h\"\n") + k_kernel);
  put(d + "/k2.cu", std::string("#include \"a/h.h\"\n#include \"b/h.h\"\n") + k_kernel);
  settle();
  kjit::Cache cache(config);
  same_(config, cache, d + "/k1.cu", {}, value_in(uncached(config, d + "/k1.cu", {})));
  same_(config, cache, d + "/k2.cu", {}, value_in(uncached(config, d + "/k2.cu", {})));
  BOOST_TEST(value_in(uncached(config, d + "/k2.cu", {})) == "251");
}

BOOST_AUTO_TEST_CASE(review4_dot_dot_after_a_symlinked_folder)
{
  const std::string d = tmp.path() + "/dots";
  put(d + "/other/deep/keep", "");
  put(d + "/other/v.h", "#define V 261\n");
  put(d + "/src/v.h", "#define V 262\n");
  BOOST_TEST_REQUIRE(::symlink((d + "/other/deep").c_str(), (d + "/src/lnk").c_str()) == 0);
  put(d + "/src/k.cu", std::string("#include \"lnk/../v.h\"\n") + k_kernel);
  settle();
  const std::string want = value_in(uncached(config, d + "/src/k.cu", {}));
  BOOST_TEST(want != "?");
  {
    kjit::Cache cache(config);
    same_(config, cache, d + "/src/k.cu", {}, want);
  }
  put(d + "/other/v.h", "#define V 263\n");
  put(d + "/src/v.h", "#define V 264\n");
  settle();
  kjit::Cache cache(config);
  same_(config, cache, d + "/src/k.cu", {}, value_in(uncached(config, d + "/src/k.cu", {})));
}

BOOST_AUTO_TEST_CASE(review5_form_feed_between_hash_and_include)
{
  const std::string d = tmp.path() + "/ff";
  put(d + "/k.cu", std::string("#\finclude \"v.h\"\n#\vinclude \"w.h\"\n") +
                     "extern \"C\" __global__ void k(int* o) { *o = V + W; }\n");
  v_and_w_edited(config, d, 270, 280);
}

BOOST_AUTO_TEST_CASE(review6_include_folder_written_with_an_equals_sign)
{
  // NVRTC reads "-I=dir" as the folder "dir", even where a folder "=dir" exists.
  const std::string d = tmp.path() + "/eq";
  put(d + "/inc/v.h", "#define V 301\n");
  put(d + "/=inc/v.h", "#define V 302\n");
  put(d + "/k.cu", std::string("#include <v.h>\n") + k_kernel);
  settle();
  const std::string cwd = std::filesystem::current_path();
  std::filesystem::current_path(d);
  kjit::Cache cache(config);
  std::string got;
  try {
    got = value_in(cached(cache, d + "/k.cu", {"-I=inc"}));
  } catch (const kjit::Error& e) {
    got = e.what();
  }
  const std::string want = value_in(uncached(config, d + "/k.cu", {"-I=inc"}));
  std::filesystem::current_path(cwd);
  BOOST_TEST(want == "301");
  BOOST_TEST(got == want);
}

BOOST_AUTO_TEST_CASE(review6_include_names_climbing_past_the_root)
{
  // From <tmp>/up/src, five ".." stop at "/" on disk. From the private folder (under $TMPDIR, here
  // <tmp>/t) they stop inside <tmp>/t: NVRTC must never read a file there that kjit did not hash.
  const std::string d = tmp.path() + "/up";
  put(d + "/inc/v.h", "#define V 291\n");
  const std::string rest = d.substr(1) + "/inc/v.h";
  put(tmp.path() + "/t/" + rest, "#define V 999\n");
  std::string climb;
  for (std::size_t i = 0, n = std::count(d.begin(), d.end(), '/') + 2; i < n; ++i) {
    climb += "../";
  }
  put(d + "/src/k.cu", "#include \"" + climb + rest + "\"\n" + k_kernel);
  settle();
  const char* old_tmpdir = std::getenv("TMPDIR");
  const std::string saved = old_tmpdir != nullptr ? old_tmpdir : "";
  ::setenv("TMPDIR", (tmp.path() + "/t").c_str(), 1);
  {
    kjit::Cache cache(config);
    same_(config, cache, d + "/src/k.cu", {}, "291");
  }
  put(d + "/inc/v.h", "#define V 292\n");
  settle();
  {
    kjit::Cache cache(config);
    same_(config, cache, d + "/src/k.cu", {}, "292");
  }
  if (old_tmpdir != nullptr) {
    ::setenv("TMPDIR", saved.c_str(), 1);
  } else {
    ::unsetenv("TMPDIR");
  }
}

// An "unfaithful" compile (compiled from disk, not cached) stored for sm_80 was served to
// compute_80 by the PTX reuse after the header it tests for appeared.
BOOST_AUTO_TEST_CASE(review7_an_unfaithful_compile_is_not_reused_for_the_virtual_arch)
{
  const std::string d = tmp.path() + "/uf";
  put(d + "/k.cu", std::string("#define S(x) #x\n#if __has_include(S(opt.h))\n#include S(opt.h)\n#endif\n"
                               "#ifndef V\n#define V 261\n#endif\n") + k_kernel);
  settle();
  {
    kjit::Cache cache(config);
    kjit::Program program = kjit::program_from_file(d + "/k.cu");
    cache.get(program, kjit::Arch::parse("sm_80"));
  }
  put(d + "/opt.h", "#define V 262\n");
  settle();
  kjit::Cache cache(config);
  same_(config, cache, d + "/k.cu", {}, "262");
}

// A compile error from a computed include of a missing header was served from the predicted key
// after the header was created.
BOOST_AUTO_TEST_CASE(review8_a_failure_is_not_served_from_a_predicted_key)
{
  const std::string d = tmp.path() + "/fail";
  put(d + "/k.cu", std::string("#define S(x) #x\n#define H(x) S(x.h)\n#include H(cfg)\n") + k_kernel);
  settle();
  {
    kjit::Cache cache(config);
    BOOST_TEST(cached(cache, d + "/k.cu", {}) == "error");
  }
  put(d + "/cfg.h", "#define V 271\n");
  settle();
  for (int round = 0; round < 2; ++round) {  // the second one through the manifest the first records
    kjit::Cache cache(config);
    same_(config, cache, d + "/k.cu", {}, "271");
  }
}

// Two names of one file with #pragma once (a hard link, a symlink) and a plain copy of the same
// bytes: not one key, or the copy was served the linked pair's binary.
BOOST_AUTO_TEST_CASE(review9_linked_names_and_a_copy_with_the_same_bytes)
{
  const std::string once = "#pragma once\n#ifdef SEEN\n#define TWICE 1\n#endif\n#define SEEN\n";
  const std::string kernel = std::string("#include \"a.h\"\n#include \"b.h\"\n#ifdef TWICE\n#define V 282\n#else\n#define V 281\n#endif\n") + k_kernel;
  for (const char* how : {"hard", "sym"}) {
    const std::string p = tmp.path() + "/" + how + "/p", q = tmp.path() + "/" + how + "/q";
    put(p + "/k.cu", kernel);
    put(p + "/a.h", once);
    if (std::string(how) == "hard") {
      BOOST_TEST_REQUIRE(::link((p + "/a.h").c_str(), (p + "/b.h").c_str()) == 0);
    } else {
      BOOST_TEST_REQUIRE(::symlink("a.h", (p + "/b.h").c_str()) == 0);
    }
    put(q + "/k.cu", kernel);
    put(q + "/a.h", once);
    put(q + "/b.h", once);
    settle();
    kjit::Cache cache(config);
    same_(config, cache, p + "/k.cu", {}, "281");
    same_(config, cache, q + "/k.cu", {}, "282");
  }
}

// A computed #include the scanner can't expand, of a name that is also a toolkit header: NVRTC
// takes the user's file beside the includer, the private folder must hold it too.
BOOST_AUTO_TEST_CASE(review10_a_computed_include_of_a_toolkit_name_beside_its_includer)
{
  const std::string d = tmp.path() + "/tk";
  const std::string computed = "#define S(x) #x\n#define H(x) S(x.h)\n#include H(vector_types)\n";
  const std::string own = "#define V 291\n#include_next <vector_types.h>\n";
  const std::string tail = std::string("#ifndef V\n#define V 290\n#endif\n") + k_kernel;
  put(d + "/p/k.cu", computed + tail);
  put(d + "/p/vector_types.h", own);
  put(d + "/k.cu", "#include <sub/g.h>\n" + tail);
  put(d + "/inc/sub/g.h", computed);
  put(d + "/inc/sub/vector_types.h", own);
  settle();
  kjit::Cache cache(config);
  same_(config, cache, d + "/p/k.cu", {}, "291");
  same_(config, cache, d + "/k.cu", {"-I" + d + "/inc"}, "291");
}

// Issue 22 gaps. Item 1: with -lineinfo, -G or __FILE__ the binary names files. It named the
// private folder's copies (a path that no longer exists and differs per compile); the copies now
// name the user's files, so the binary is plain NVRTC's, byte for byte. With -G the compile unit
// still names the private copy of the main source (NVRTC takes it from the program's name; see
// docs/includes.md): there the files named (.file, __FILE__) are compared.
BOOST_AUTO_TEST_CASE(item1_lineinfo_and_file_name_the_users_files_not_the_private_copies)
{
  const std::string d = tmp.path() + "/lines";
  put(d + "/inc/h.h", "#define V 401\n__device__ const char* where() { return __FILE__; }\n");
  put(d + "/src/k.cu", "#include <h.h>\nextern \"C\" __global__ void k(int* o, const char** s) { *o = V; *s = where(); }\n");
  settle();
  const auto files_named = [](const std::string& ptx) {
    std::string out;
    for (std::size_t at = 0, end; at < ptx.size(); at = end + 1) {
      end = std::min(ptx.find('\n', at), ptx.size());
      const std::string line = ptx.substr(at, end - at);
      out += line.find(".file") != std::string::npos || line.find("$str") != std::string::npos ? line + "\n" : "";
    }
    return out;
  };
  const kjit::Arch sm80 = kjit::Arch::parse("sm_80");
  for (const std::string debug : {"-lineinfo", "-G"}) {
    const std::vector<std::string> options{"-I" + d + "/inc", debug};
    kjit::Program plain{d + "/src/k.cu", read_text(d + "/src/k.cu"), {}, options, {}};
    const kjit::Binary want = kjit::rtc::compile(config, plain, sm80);
    BOOST_TEST(files_named(want.ptx).find("\"" + d + "/src/k.cu\"") != std::string::npos);  // a .file line
    BOOST_TEST(files_named(want.ptx).find("$str") != std::string::npos);  // where()'s __FILE__
    for (int round = 0; round < 2; ++round) {  // two caches: the output is the same every time
      config.cache_dir = tmp.path() + "/lines-cache" + std::to_string(round);
      kjit::Cache cache(config);
      kjit::Program program = kjit::program_from_file(d + "/src/k.cu");
      program.options = options;
      const auto got = cache.get(program, sm80);
      BOOST_TEST(files_named(got->ptx) == files_named(want.ptx));
      if (debug == "-lineinfo") {
        BOOST_TEST(got->ptx == want.ptx);
        BOOST_TEST(got->cubin.find("kjit-includes-") == std::string::npos);
        BOOST_TEST(got->cubin == want.cubin);
      }
    }
  }
}

// rev_keys: NVRTC on disk names a header by its includer's name and the include name as written
// ("sub/inc/x.h", "./idir/z.h"), not by its absolute path. Failed before: the copies were named by
// absolute paths. Each spelling gets its own cache here; key_names/spellings_* checks them in one
// (the names are in the key when the binary names files).
BOOST_AUTO_TEST_CASE(review11_file_names_as_written_relative_to_the_working_directory)
{
  const std::string d = tmp.path() + "/spelled";
  put(d + "/sub/inc/x.h", "#pragma once\n__device__ const char* x() { return __FILE__; }\n");
  put(d + "/sub/inc/y.h", "#pragma once\n#include \"../inc/x.h\"\n__device__ const char* y() { return __FILE__; }\n");
  put(d + "/idir/z.h", "#pragma once\n__device__ const char* z() { return __FILE__; }\n");
  put(d + "/sub/k.cu", "#include \"inc//y.h\"\n#include <z.h>\n"
                       "extern \"C\" __global__ void k(const char** s) { s[0] = x(); s[1] = y(); s[2] = z(); s[3] = __FILE__; }\n");
  settle();
  char here[4096];
  BOOST_REQUIRE(::getcwd(here, sizeof here) != nullptr);
  BOOST_REQUIRE(::chdir(d.c_str()) == 0);
  int round = 0;
  for (const auto& [src, dir] : std::vector<std::pair<std::string, std::string>>{
         {"sub/k.cu", "-Iidir"}, {"./sub/k.cu", "-I./idir/"}, {"sub/k.cu", "-I" + d + "/idir"}}) {
    config.cache_dir = tmp.path() + "/spelled-cache" + std::to_string(round++);
    kjit::Cache cache(config);
    kjit::Program plain{src, read_text(src), {}, {dir}, {}};
    const std::string want = kjit::rtc::compile(config, plain, k_arch).ptx;
    kjit::Program program = kjit::program_from_file(src);
    program.options = {dir};
    const std::string got = cache.get(program, k_arch)->ptx;
    BOOST_TEST(got == want, src << " " << dir);
  }
  BOOST_REQUIRE(::chdir(here) == 0);
}

// Issue 36: a copy's #line goes after its include guard or #pragma once (NVRTC reads a header with
// a directive before its guard again at each inclusion: 0.2 s of a vendored CCCL's compile). The
// lines keep their numbers and the binary names the user's files: __FILE__ and __LINE__ in
// guarded headers included twice give the PTX of plain NVRTC on the files.
BOOST_AUTO_TEST_CASE(a_copys_line_directive_goes_after_its_include_guard)
{
  using kjit::cache::named;
  BOOST_TEST(named("inc/g.h", "// c\n/* two\nlines */\n#ifndef G\n#define G\nint a;\n#endif\n", true) ==
             "// c\n/* two\nlines */\n#ifndef G\n#define G\n#line 6 \"inc/g.h\"\nint a;\n#endif\n");
  BOOST_TEST(named("o.h", "#pragma once\nint b;\n", true) == "#pragma once\n#line 2 \"o.h\"\nint b;\n");
  BOOST_TEST(named("v.h", "  # ifndef V\n\n#  define V 1\nint e;\n#endif\n", true) ==
             "  # ifndef V\n\n#  define V 1\n#line 4 \"v.h\"\nint e;\n#endif\n");
  BOOST_TEST(named("t.h", "\xEF\xBB\xBF#pragma once\nint d;\n", true) == "\xEF\xBB\xBF#pragma once\n#line 2 \"t.h\"\nint d;\n");
  // Code before the guard, a guard this reader does not follow, or no -G/-lineinfo promise: on top.
  BOOST_TEST(named("p.h", "int c;\n#ifndef G\n#define G\n#endif\n", true) == "#line 1 \"p.h\"\nint c;\n#ifndef G\n#define G\n#endif\n");
  for (const std::string text : {"#ifndef G // guard\n#define G\n#endif\n", "// a \\\n#ifndef G\n#define G\n#endif\n",
                                 "#ifndef G\n#define H\n#endif\n", "#ifndef G\n#define G"}) {
    BOOST_TEST(named("q.h", text, true) == "#line 1 \"q.h\"\n" + text);
  }
  BOOST_TEST(named("o.h", "#pragma once\nint b;\n") == "#line 1 \"o.h\"\n#pragma once\nint b;\n");
  // A guard that is not the whole file (code after its #endif, an #else of its own): the #line
  // inside it would be skipped with it (a review's finding); nested conditionals are fine.
  for (const std::string text : {"#ifndef G\n#define G\n#endif\nint x;\n", "#ifndef G\n#define G\nint x;\n#else\nint y;\n#endif\n",
                                 "#ifndef G\n#define G\n#elif 1\n#endif\n", "#ifndef G\n#define G\n#endif\n#ifndef G\n#endif\n"}) {
    BOOST_TEST(named("r.h", text, true) == "#line 1 \"r.h\"\n" + text);
  }
  BOOST_TEST(named("n.h", "#ifndef G\n#define G\n#if A\nint a;\n#else\nint b;\n#endif\n#endif // G\n/* end */\n", true) ==
             "#ifndef G\n#define G\n#line 3 \"n.h\"\n#if A\nint a;\n#else\nint b;\n#endif\n#endif // G\n/* end */\n");

  const std::string d = tmp.path() + "/guarded";
  put(d + "/inc/str.h", "// Stringify.\n#ifndef STR_H\n#define STR_H\n#define S2(x) #x\n#define S(x) S2(x)\n#endif\n");
  put(d + "/inc/g.h", "/* g.h:\n   where */\n#ifndef G_H\n#define G_H\n#include \"str.h\"\n"
                      "__device__ const char* g() { return __FILE__ \":\" S(__LINE__); }\n#endif\n");
  put(d + "/inc/o.h", "#pragma once\n#include \"g.h\"\n__device__ const char* o() { return __FILE__ \":\" S(__LINE__); }\n");
  put(d + "/k.cu", "#include \"inc/g.h\"\n#include \"inc/o.h\"\n#include \"inc/g.h\"\n#include \"inc/o.h\"\n"
                   "extern \"C\" __global__ void k(const char** s) { s[0] = g(); s[1] = o(); }\n");
  // Guards that are not the whole file, each included twice (the second skips the guarded part),
  // one with its guard defined by -D (the review's reproducers: __LINE__ one too high, the copy's
  // sizeof(__FILE__)).
  put(d + "/inc/after.h", "#ifndef AFTER_H\n#define AFTER_H\n#endif\nA(__LINE__)\n");
  put(d + "/inc/predef.h", "#ifndef PREDEF_H\n#define PREDEF_H\n#endif\n"
                           "__device__ int fsize = sizeof(__FILE__); __device__ int fline = __LINE__;\n");
  put(d + "/inc/other.h", "#ifndef OTHER_H\n#define OTHER_H\n__device__ int oa = __LINE__;\n#else\n"
                          "__device__ int ob = __LINE__;\n#endif\n");
  put(d + "/after.cu", "#define A(x) __device__ int a1 = x;\n#include \"inc/after.h\"\n#undef A\n"
                       "#define A(x) __device__ int a2 = x;\n#include \"inc/after.h\"\n#include \"inc/predef.h\"\n"
                       "#include \"inc/other.h\"\n#include \"inc/other.h\"\n"
                       "__device__ const char* f = __FILE__;\n"
                       "extern \"C\" __global__ void k(int* x) { x[0] = a1 + a2 + fsize + fline + oa + ob + (f != 0); }\n");
  settle();
  config.cache_dir = tmp.path() + "/guarded-cache";
  kjit::Cache cache(config);
  const std::string source = read_text(d + "/k.cu");
  const std::string want = kjit::rtc::compile(config, {d + "/k.cu", source, {}, {}, {}}, k_arch).ptx;
  // The names and lines the binary holds (PTX spells a string as its bytes: "105, 110, 99, …").
  const auto bytes_of = [](const std::string& text) {
    std::string out;
    for (const char ch : text) {
      out += (out.empty() ? "" : ", ") + std::to_string(static_cast<unsigned char>(ch));
    }
    return out;
  };
  BOOST_TEST(want.find(bytes_of("inc/g.h:6")) != std::string::npos);
  BOOST_TEST(want.find(bytes_of("inc/o.h:3")) != std::string::npos);
  BOOST_TEST(cache.get(kjit::program_from_file(d + "/k.cu"), k_arch)->ptx == want);
  const kjit::Program after_plain{d + "/after.cu", read_text(d + "/after.cu"), {}, {"-DPREDEF_H"}, {}};
  const std::string after_want = kjit::rtc::compile(config, after_plain, k_arch).ptx;
  kjit::Program after = kjit::program_from_file(d + "/after.cu");
  after.options = {"-DPREDEF_H"};
  BOOST_TEST(cache.get(after, k_arch)->ptx == after_want);
}

// NVRTC looks for a quoted include of an in-memory header ("sub/h.h" including "x.h") next to it,
// relative to the working directory, and opens that file itself (strace: "sub/x.h"), never kjit's
// copy. Here x.h is edited while the compile runs (when kjit reads z.h, which only NVRTC's second
// round asks for): it was stored under the key of the bytes kjit read, and served for them later
// (101 for 100). Included from a disk header, x.h's copy is what NVRTC reads (the guard).
BOOST_AUTO_TEST_CASE(review12_an_in_memory_headers_neighbour_on_disk_is_read_by_nvrtc_itself)
{
  const std::string d = tmp.path() + "/memory";
  put(d + "/sub/y.h", "#include \"x.h\"\n");
  put(d + "/z.h", "#define Z 0\n");
  struct Cwd {
    char here[4096] = {};
    explicit Cwd(const std::string& to) { BOOST_REQUIRE(::getcwd(here, sizeof here) != nullptr && ::chdir(to.c_str()) == 0); }
    ~Cwd() { std::ignore = ::chdir(here); }
  } cwd(d);
  for (const bool in_memory : {true, false}) {
    kjit::Program program{"k.cu",
                          std::string("#include \"sub/") + (in_memory ? "h" : "y") + ".h\"\n#define F(x) #x\n#include F(z.h)\n" +
                            "extern \"C\" __global__ void k(int* o) { *o = V + Z; }\n",
                          {}, {}, {}};
    if (in_memory) {
      program.headers["sub/h.h"] = "#include \"x.h\"\n";
    }
    config.cache_dir = tmp.path() + "/memory-cache" + std::to_string(in_memory);
    put(d + "/sub/x.h", "#define V 100\n");
    settle();
    kjit::deps::set_read_hook([&](const std::string& path) {
      if (path == d + "/z.h") {
        write_text(d + "/sub/x.h", "#define V 101\n");
      }
    });
    {
      kjit::Cache cache(config);
      cache.get(program, k_arch);
    }
    kjit::deps::set_read_hook({});
    write_text(d + "/sub/x.h", "#define V 100\n");  // back to what kjit hashed
    settle();
    kjit::Cache cache(config);
    BOOST_TEST(value_in(kjit::rtc::compile(config, program, k_arch).ptx) == "100");
    const std::string got = value_in(cache.get(program, k_arch)->ptx);
    BOOST_TEST(got == "100", "in memory " << in_memory << ": " << got);  // was 101
  }
  // Not there when kjit looked (x.h is found through -I), made during the compile: NVRTC took it.
  ::unlink((d + "/sub/x.h").c_str());
  put(d + "/inc/x.h", "#define V 200\n");
  settle();
  kjit::Program program{"k.cu", "#include \"sub/h.h\"\n#define F(x) #x\n#include F(z.h)\n"
                                "extern \"C\" __global__ void k(int* o) { *o = V + Z; }\n",
                        {{"sub/h.h", "#include \"x.h\"\n"}}, {"-Iinc"}, {}};
  config.cache_dir = tmp.path() + "/memory-cache-appearing";
  kjit::deps::set_read_hook([&](const std::string& path) {
    if (path == d + "/z.h") {
      write_text(d + "/sub/x.h", "#define V 201\n");
    }
  });
  {
    kjit::Cache cache(config);
    BOOST_TEST(value_in(cache.get(program, k_arch)->ptx) == "201");  // compiled again: x.h is beside it now
  }
  kjit::deps::set_read_hook({});
  ::unlink((d + "/sub/x.h").c_str());  // the state kjit saw
  settle();
  kjit::Cache cache(config);
  BOOST_TEST(value_in(kjit::rtc::compile(config, program, k_arch).ptx) == "200");
  BOOST_TEST(value_in(cache.get(program, k_arch)->ptx) == "200");  // was 201
}

// Item 2: NVRTC opens an absolute include name on disk itself (and what that file includes from
// its folder), never the private copy: such a program is compiled from the disk, not cached.
BOOST_AUTO_TEST_CASE(item2_an_absolute_include_name_is_not_served_stale)
{
  const std::string d = tmp.path() + "/absolute";
  put(d + "/abs/x.h", "#define S(x) #x\n#define H(x) S(x.h)\n#include H(y)\n");
  put(d + "/abs/y.h", "#define V 411\n");
  put(d + "/src/k.cu", "#include \"" + d + "/abs/x.h\"\n" + k_kernel);
  settle();
  {
    kjit::Cache cache(config);
    same_(config, cache, d + "/src/k.cu", {}, "411");
  }
  put(d + "/abs/y.h", "#define V 412\n");
  settle();
  kjit::Cache cache(config);
  same_(config, cache, d + "/src/k.cu", {}, "412");
}

// Item 5: "-D NAME=V" as two arguments and "--define-macro=NAME=V" are read like "-DNAME=V": a
// __has_include of such a macro is followed and cached (it was compiled from the disk each time).
BOOST_AUTO_TEST_CASE(item5_defines_in_every_spelling_are_read)
{
  const std::string d = tmp.path() + "/defines";
  put(d + "/opt.h", "#define OPT_V 1\n");
  put(d + "/k.cu", std::string("#if __has_include(OPT)\n#define V 421\n#else\n#define V 420\n#endif\n") + k_kernel);
  settle();
  long not_cached = 0;
  kjit::set_log_sink([&not_cached](std::string_view line) { not_cached += line.find("not cached") != std::string_view::npos; });
  const std::vector<std::vector<std::string>> spellings{
    {"-D", "OPT=\"opt.h\""}, {"--define-macro=OPT=\"opt.h\""}, {"--define-macro", "OPT=\"opt.h\""}};
  for (const auto& options : spellings) {
    kjit::Cache cache(config);
    same_(config, cache, d + "/k.cu", options, "421");
  }
  std::remove((d + "/opt.h").c_str());
  settle();
  for (const auto& options : spellings) {
    kjit::Cache cache(config);
    same_(config, cache, d + "/k.cu", options, "420");
  }
  kjit::set_log_sink({});
  BOOST_TEST(not_cached == 0);
  const auto defines = kjit::deps::defines_from_options({"-D", "A=1", "--define-macro=B=2", "--define-macro", "C=3", "-DD",
                                                         "-I", "-DE=5", "-DA=6"});
  BOOST_TEST(defines.at("A") == "6");
  BOOST_TEST(defines.at("B") == "2");
  BOOST_TEST(defines.at("C") == "3");
  BOOST_TEST(defines.at("D") == "1");
  BOOST_TEST(defines.count("E") == 0u);  // the folder "-DE=5" of -I
}

// Item 3: an include name through a subfolder and ".." ("crt/../vector_types.h"): on disk it
// leads to the file beside the includer, but the private folder had no "crt" there, so NVRTC went
// on to the toolkit's "crt/../vector_types.h" (the toolkit's file) or found nothing. Written
// plainly, and computed (only NVRTC sees the name).
BOOST_AUTO_TEST_CASE(item3_a_name_through_a_subfolder_and_dot_dot_reaches_the_users_file)
{
  const std::string d = tmp.path() + "/through";
  put(d + "/src/crt/keep.txt", "\n");
  put(d + "/src/sub/deeper/keep.txt", "\n");
  put(d + "/src/vector_types.h", "#define V 441\n#include_next <vector_types.h>\n");
  put(d + "/src/w.h", "#define W 3\n");
  const std::string tail = std::string("#ifndef V\n#define V 440\n#endif\n#ifndef W\n#define W 0\n#endif\n") +
                           "extern \"C\" __global__ void k(int* o) { *o = V + W; }\n";
  put(d + "/src/k1.cu", "#include \"crt/../vector_types.h\"\n#include \"sub/deeper/../../w.h\"\n" + tail);
  put(d + "/src/k2.cu", "#define S(x) #x\n#define H(x) S(x)\n#include H(crt/../vector_types.h)\n#include H(sub/deeper/../../w.h)\n" + tail);
  settle();
  for (const char* source : {"/src/k1.cu", "/src/k2.cu"}) {
    kjit::Cache cache(config);
    same_(config, cache, d + source, {}, "444");
  }
  put(d + "/src/vector_types.h", "#define V 451\n#include_next <vector_types.h>\n");
  settle();
  for (const char* source : {"/src/k1.cu", "/src/k2.cu"}) {
    kjit::Cache cache(config);
    same_(config, cache, d + source, {}, "454");
  }
}

// Item 4: a toolkit header probing a name no user file names (<cuda/std/version> asks
// `_CCCL_HAS_INCLUDE(<version>)` and includes it): NVRTC takes an -I folder's "version" on disk,
// the private folder had none.
BOOST_AUTO_TEST_CASE(item4_a_toolkit_header_probing_a_name_a_user_folder_has)
{
  const std::string d = tmp.path() + "/probed";
  put(d + "/inc/version", "#define V 461\n");
  put(d + "/k.cu", std::string("#include <cuda/std/version>\n#ifndef V\n#define V 460\n#endif\n") + k_kernel);
  settle();
  const std::vector<std::string> options{"-I" + d + "/inc", "-std=c++17"};
  {
    kjit::Cache cache(config);
    same_(config, cache, d + "/k.cu", options, "461");
  }
  put(d + "/inc/version", "#define V 462\n");
  settle();
  kjit::Cache cache(config);
  same_(config, cache, d + "/k.cu", options, "462");
}

namespace {

std::int64_t coarse_now_ns()
{
  struct timespec now {};
  ::clock_gettime(CLOCK_REALTIME_COARSE, &now);
  return static_cast<std::int64_t>(now.tv_sec) * 1000000000 + now.tv_nsec;
}

// The stamps of the files under `dir` as a filesystem keeping whole seconds gives them (ext4 with
// 128-byte inodes, ext3, HFS+, some NFS servers; FAT keeps 2 s), without needing one: what was
// changed before start() reads as a second well in the past, what is changed after it as the
// second start() fell in, however many times it changes (an edit within that second keeps the
// size, inode, mtime and ctime).
class WholeSecondStamps {
public:
  explicit WholeSecondStamps(std::string dir) : m_dir(std::move(dir))
  {
    kjit::deps::set_stamp_hook([this](const std::string& path, kjit::deps::FileStamp& stamp) {
      if (path.compare(0, m_dir.size(), m_dir) != 0) {
        return;
      }
      const auto whole = [this](std::int64_t t) { return t >= m_start ? m_second : m_second - 10 * k_second; };
      stamp.mtime_ns = whole(stamp.mtime_ns);
      stamp.ctime_ns = whole(stamp.ctime_ns);
    });
  }
  ~WholeSecondStamps() { kjit::deps::set_stamp_hook({}); }
  WholeSecondStamps(const WholeSecondStamps&) = delete;
  WholeSecondStamps& operator=(const WholeSecondStamps&) = delete;
  // From now on, each change of a file under the folder is stamped with this second.
  void start()
  {
    m_start = coarse_now_ns();  // the clock the kernel stamps files with (or a later, finer one)
    m_second = m_start - m_start % k_second;
  }

private:
  static constexpr std::int64_t k_second = 1000000000;
  std::string m_dir;
  std::int64_t m_start = std::numeric_limits<std::int64_t>::max();
  std::int64_t m_second = 20 * k_second;
};

// Rewrites `path` in place (same inode), as an editor saving over it or `echo >` does.
void rewrite(const std::string& path, const std::string& content)
{
  write_text(path, content);
}

// same_(), the cached lookup first: right after WholeSecondStamps::start(), before an uncached
// compile (seconds on a loaded machine) could take the lookup out of the stamps' second.
void cached_first_(const kjit::Config& config, kjit::Cache& cache, const std::string& src,
                   const std::vector<std::string>& options, const std::string& expected)
{
  const std::string got = cached(cache, src, options);
  const std::string want = uncached(config, src, options);
  BOOST_TEST(value_in(got) == value_in(want));
  BOOST_TEST(value_in(want) == expected);
}

} // namespace

// A header edited twice within one second on a filesystem keeping whole seconds: the second edit
// keeps every field of the stamp. The compile that read the first version started in that second,
// after it: its manifest must not be recorded (too new), or the second version is served the
// first's binary. Before, "too new" compared the stamp with the start to the nanosecond (the
// stamp's second began before the start), and 501 was served for 502, from memory and from disk.
BOOST_AUTO_TEST_CASE(an_edit_within_the_same_second_on_whole_second_timestamps_is_not_served_stale)
{
  const std::string d = tmp.path() + "/secs";
  put(d + "/k.cu", std::string("#include \"val.h\"\n") + k_kernel);
  put(d + "/val.h", "#define V 500\n");
  settle();
  WholeSecondStamps stamps(d);
  kjit::Cache cache(config);
  static_cast<void>(cache.prepare(kjit::program_from_file(d + "/k.cu"), k_arch));  // the toolkit's fingerprint, made now
  stamps.start();
  rewrite(d + "/val.h", "#define V 501\n");
  cached_first_(config, cache, d + "/k.cu", {}, "501");
  rewrite(d + "/val.h", "#define V 502\n");  // the same size, inode and second
  same_(config, cache, d + "/k.cu", {}, "502");
  kjit::Cache fresh(config);
  same_(config, fresh, d + "/k.cu", {}, "502");
}

// A header touched (same content) and then edited within the same second: the lookup after the
// touch hashes it again and finds the same content. It must not take the touch's stamp as the
// header's (too new): the edit that follows keeps that stamp. Before, it did, and 511 was served
// for 512.
BOOST_AUTO_TEST_CASE(a_touch_then_an_edit_within_the_same_second_is_not_served_stale)
{
  const std::string d = tmp.path() + "/touched";
  put(d + "/k.cu", std::string("#include \"val.h\"\n") + k_kernel);
  put(d + "/val.h", "#define V 511\n");
  settle();
  WholeSecondStamps stamps(d);
  kjit::Cache cache(config);
  same_(config, cache, d + "/k.cu", {}, "511");  // recorded: the header's second is long past
  stamps.start();
  rewrite(d + "/val.h", "#define V 511\n");  // a touch: the same content, a new stamp
  cached_first_(config, cache, d + "/k.cu", {}, "511");
  rewrite(d + "/val.h", "#define V 512\n");  // the same size, inode and second as the touch
  same_(config, cache, d + "/k.cu", {}, "512");
  kjit::Cache fresh(config);
  same_(config, fresh, d + "/k.cu", {}, "512");
}

// A folder searched first, changed and then given the header within the same second: its stamp
// is the same before and after the file appears. Its change during the second of the compile
// makes it too new to watch. Before, the manifest watched it, and the later folder's 521 was
// served where NVRTC reads the new file's 522.
BOOST_AUTO_TEST_CASE(a_header_appearing_within_the_same_second_in_an_earlier_folder_is_seen)
{
  const std::string d = tmp.path() + "/shadow";
  put(d + "/k.cu", std::string("#include \"val.h\"\n") + k_kernel);
  put(d + "/b/val.h", "#define V 521\n");
  put(d + "/a/other.h", "\n");
  settle();
  const std::vector<std::string> options{"-I" + d + "/a", "-I" + d + "/b"};
  WholeSecondStamps stamps(d);
  kjit::Cache cache(config);
  kjit::Program program = kjit::program_from_file(d + "/k.cu");
  program.options = options;
  static_cast<void>(cache.prepare(program, k_arch));  // the toolkit's fingerprint, made now
  stamps.start();
  BOOST_TEST(::unlink((d + "/a/other.h").c_str()) == 0);  // the folder changes in this second
  cached_first_(config, cache, d + "/k.cu", options, "521");
  put(d + "/a/val.h", "#define V 522\n");
  same_(config, cache, d + "/k.cu", options, "522");
  kjit::Cache fresh(config);
  same_(config, fresh, d + "/k.cu", options, "522");
}

// Two headers on two filesystems whose inode numbers, sizes and timestamps happen to be equal
// (small filesystems number their inodes alike; whole-second or coarse timestamps of files made
// together): they are two files, not one file by two names. Before, the identity kjit gave a file
// left the device out: the second header's copy was a hard link to the first's, NVRTC read the
// first's text for it and 531 was cached where plain NVRTC gives 532.
BOOST_AUTO_TEST_CASE(headers_on_two_filesystems_with_equal_inode_numbers_are_two_files)
{
  const std::string shm = "/dev/shm";
  struct stat here {};
  struct stat there {};
  if (::stat(tmp.path().c_str(), &here) != 0 || ::stat(shm.c_str(), &there) != 0 || here.st_dev == there.st_dev ||
      ::access(shm.c_str(), W_OK) != 0) {
    BOOST_TEST_MESSAGE("no writable /dev/shm on another filesystem than " + tmp.path() + ": not run");
    return;
  }
  const std::string d = tmp.path() + "/devs";
  const std::string e = shm + "/kjit-test-" + std::to_string(::getpid()) + "-devs";
  struct Removed {
    std::string dir;
    ~Removed()
    {
      kjit::deps::set_stamp_hook({});
      ::unlink((dir + "/two.h").c_str());
      ::rmdir(dir.c_str());
    }
  } removed{e};
  put(d + "/k.cu", std::string("#include \"one.h\"\n#include \"two.h\"\n") + k_kernel);
  put(d + "/one.h", "#undef V\n#define V 531\n");
  BOOST_REQUIRE(::mkdir(e.c_str(), 0700) == 0);
  put(e + "/two.h", "#undef V\n#define V 532\n");  // the same size
  settle();
  const kjit::deps::FileStamp first = kjit::deps::stamp_of(d + "/one.h");
  kjit::deps::set_stamp_hook([&](const std::string& path, kjit::deps::FileStamp& stamp) {
    if (path == e + "/two.h") {  // as if the other filesystem had numbered and stamped it alike
      stamp.inode = first.inode;
      stamp.mtime_ns = first.mtime_ns;
      stamp.ctime_ns = first.ctime_ns;
    }
  });
  const std::vector<std::string> options{"-I" + e};
  {
    kjit::Cache cache(config);
    same_(config, cache, d + "/k.cu", options, "532");
  }
  kjit::Cache cache(config);
  same_(config, cache, d + "/k.cu", options, "532");
}

// A compile kjit does not cache (NVRTC or ptxas read a file no key holds) must not be kept in the
// memory tier either: the next lookup in the same Cache compiles again. Before, the prepared key
// of such a program (no "include" in its texts, so not provisional) was given the result: a lookup
// after val.h was removed got 11 where NVRTC gives 22, and a lookup after the ptxas options file
// was edited got the cubin of the old register limit, while the log said "not cached".
BOOST_AUTO_TEST_CASE(a_compile_that_is_not_cached_is_not_kept_in_memory_either)
{
  const std::string d = tmp.path() + "/nocache";
  put(d + "/probe.cu", "#if HAS\n#define V 11\n#else\n#define V 22\n#endif\n" + std::string(k_kernel));
  put(d + "/val.h", "#define Q 1\n");
  settle();
  kjit::Cache cache(config);
  const std::vector<std::string> probe{"-DHAS=__has_include(\"val.h\")"};
  same_(config, cache, d + "/probe.cu", probe, "11");
  BOOST_TEST_REQUIRE(::unlink((d + "/val.h").c_str()) == 0);
  same_(config, cache, d + "/probe.cu", probe, "22");

  const kjit::Arch sm80 = kjit::Arch::parse("sm_80");
  put(d + "/ptxas.txt", "--maxrregcount=24\n");
  kjit::Program program = kjit::Program::from_source(
    "optf.cu", "extern \"C\" __global__ void k(float* p) { float a[64];\n"
               "  for (int i = 0; i < 64; ++i) a[i] = p[i] * p[i + 1];\n"
               "  float s = 0; for (int i = 0; i < 64; ++i) s += a[(i * 7) % 64] * p[i];\n  p[0] = s; }\n");
  program.options.push_back("-Xptxas=--options-file=" + d + "/ptxas.txt");
  const std::string before = cache.get(program, sm80)->cubin;
  put(d + "/ptxas.txt", "--maxrregcount=128\n");
  const std::string now = cache.get(program, sm80)->cubin;
  BOOST_TEST((now == kjit::compile(program, sm80).cubin));
  BOOST_TEST((now != before));
  BOOST_TEST(cache.stats().compiles == 4u);
}

// A name found first as a symbolic link whose target is missing (a generated header not made yet,
// a build tree's link farm): NVRTC skips it and takes the next folder's file. Its target can
// appear in a folder no search looks into, the link's folder unchanged. Before, the manifest
// watched only the link's folder: when the target appeared, the next folder's 541 was served where
// NVRTC reads the target's 542; likewise through a dangling link to a folder (lnk/val.h).
BOOST_AUTO_TEST_CASE(a_dangling_link_whose_target_appears_is_seen)
{
  const std::string d = tmp.path() + "/dangling";
  put(d + "/k.cu", std::string("#include \"val.h\"\n") + k_kernel);
  put(d + "/k2.cu", std::string("#include \"lnk/val.h\"\n") + k_kernel);
  put(d + "/b/val.h", "#define V 541\n");
  put(d + "/b/lnk/val.h", "#define V 541\n");
  put(d + "/gen/other.h", "\n");
  put(d + "/a/other.h", "\n");
  BOOST_TEST_REQUIRE(::symlink("../gen/val.h", (d + "/a/val.h").c_str()) == 0);
  BOOST_TEST_REQUIRE(::symlink("../gen/sub", (d + "/a/lnk").c_str()) == 0);
  settle();
  const std::vector<std::string> options{"-I" + d + "/a", "-I" + d + "/b"};
  {
    kjit::Cache cache(config);
    same_(config, cache, d + "/k.cu", options, "541");
    same_(config, cache, d + "/k2.cu", options, "541");
    put(d + "/gen/val.h", "#define V 542\n");
    put(d + "/gen/sub/val.h", "#define V 543\n");
    settle();
    same_(config, cache, d + "/k.cu", options, "542");
    same_(config, cache, d + "/k2.cu", options, "543");
  }
  kjit::Cache cache(config);
  same_(config, cache, d + "/k.cu", options, "542");
  same_(config, cache, d + "/k2.cu", options, "543");
}

// A header NVRTC can't read (no read permission): it skips it and takes the next folder's file.
// chmod changes the file's ctime, not its folder's stamp. Before, the manifest watched only the
// folder: once the file was made readable, the next folder's 545 was served where NVRTC reads
// 546. Root reads every file: run by another user only.
BOOST_AUTO_TEST_CASE(an_unreadable_header_made_readable_is_seen)
{
  if (::geteuid() == 0) {
    BOOST_TEST_MESSAGE("run as root, who reads a file without read permission: not run");
    return;
  }
  const std::string d = tmp.path() + "/unreadable";
  put(d + "/k.cu", std::string("#include \"val.h\"\n") + k_kernel);
  put(d + "/a/val.h", "#define V 546\n");
  put(d + "/b/val.h", "#define V 545\n");
  BOOST_TEST_REQUIRE(::chmod((d + "/a/val.h").c_str(), 0) == 0);
  settle();
  const std::vector<std::string> options{"-I" + d + "/a", "-I" + d + "/b"};
  {
    kjit::Cache cache(config);
    same_(config, cache, d + "/k.cu", options, "545");
    BOOST_TEST_REQUIRE(::chmod((d + "/a/val.h").c_str(), 0600) == 0);
    settle();
    same_(config, cache, d + "/k.cu", options, "546");
  }
  kjit::Cache cache(config);
  same_(config, cache, d + "/k.cu", options, "546");
}

BOOST_AUTO_TEST_SUITE_END()
