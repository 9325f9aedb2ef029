// Computed includes and file names reached through macros kjit's scanner does not follow (a
// toolkit header's, a user header's, a -D, macros expanding to nothing): a cached result is
// plain NVRTC's on the files now, byte for byte, after every edit.
#include <boost/test/unit_test.hpp>

#include "fixture.hpp"

#include "deps/resolver.hpp"
#include "rtc/compiler.hpp"

#include <string>
#include <vector>

using namespace kjit::test;

namespace {

const kjit::Arch k_arch = kjit::Arch::parse("compute_80");

kjit::Binary plain(const kjit::Config& config, const std::string& src, const std::vector<std::string>& options)
{
  kjit::Program program{src, read_text(src), {}, options, {}};
  return kjit::rtc::compile(config, program, k_arch);
}

// Compiles `src` through a fresh Cache (a new process would do the same) and checks the result
// against plain NVRTC on the files as they are now; `value` must be in the PTX.
void same_as_plain(const kjit::Config& config, const std::string& src, const std::vector<std::string>& options,
                   const std::string& value)
{
  kjit::Cache cache(config);
  kjit::Program program = kjit::program_from_file(src);
  program.options = options;
  const auto got = cache.get(program, k_arch);
  BOOST_TEST(got->ptx.find(value) != std::string::npos, src << " has " << value);
  BOOST_TEST(got->ptx == plain(config, src, options).ptx, src);
}

} // namespace

BOOST_FIXTURE_TEST_SUITE(key_toolkit_macros, CacheFixture)

// An absolute name whose '/' follows a macro that expands to nothing: NVRTC opens it on disk, a
// file kjit never hashed. Failed before: the second run was served the first value.
BOOST_AUTO_TEST_CASE(an_absolute_name_after_an_empty_macro_is_not_served_stale)
{
  const std::string d = tmp.path() + "/empty";
  put(d + "/src/k.cu", "#define EMPTY\n#define S(x) #x\n#define P(x) S(x)\n#include P(EMPTY " + d +
                           "/abs/h.h)\nextern \"C\" __global__ void k(int* o) { *o = V; }\n");
  for (const int value : {611, 612}) {
    put(d + "/abs/h.h", "#define V " + std::to_string(value) + "\n");
    settle();
    same_as_plain(config, d + "/src/k.cu", {}, std::to_string(value));
  }
}

// The same through a -D value: the '/' comes after a macro in the option's text.
BOOST_AUTO_TEST_CASE(an_absolute_name_formed_from_a_define_is_not_served_stale)
{
  const std::string d = tmp.path() + "/defined";
  put(d + "/src/k.cu", "#define EMPTY\n#define S(x) #x\n#define P(x) S(x)\n#include P(WHERE)\n"
                       "extern \"C\" __global__ void k(int* o) { *o = V; }\n");
  for (const int value : {621, 622}) {
    put(d + "/abs/h.h", "#define V " + std::to_string(value) + "\n");
    settle();
    same_as_plain(config, d + "/src/k.cu", {"-DWHERE=EMPTY " + d + "/abs/h.h"}, std::to_string(value));
  }
}

// A computed include whose macro a user header defines, and one given by -D: the file it names is
// edited, then the macro is made to name another file.
BOOST_AUTO_TEST_CASE(a_computed_include_follows_edits_of_the_file_its_macro_names)
{
  const std::string d = tmp.path() + "/computed";
  put(d + "/src/k.cu", "#include \"cfg.h\"\n#define S(x) #x\n#define Q(x) S(x)\n#include Q(HDR)\n"
                       "extern \"C\" __global__ void k(int* o) { *o = V; }\n");
  put(d + "/src/d.cu", "#include HDR2\nextern \"C\" __global__ void k(int* o) { *o = V; }\n");
  for (const int value : {631, 632}) {
    put(d + "/src/cfg.h", "#define HDR v.h\n");
    put(d + "/src/v.h", "#define V " + std::to_string(value) + "\n");
    put(d + "/src/w.h", "#define V " + std::to_string(value + 10) + "\n");
    settle();
    same_as_plain(config, d + "/src/k.cu", {}, std::to_string(value));
    same_as_plain(config, d + "/src/d.cu", {"-DHDR2=\"v.h\""}, std::to_string(value));
    put(d + "/src/cfg.h", "#define HDR w.h\n");
    settle();
    same_as_plain(config, d + "/src/k.cu", {}, std::to_string(value + 10));
    same_as_plain(config, d + "/src/d.cu", {"-DHDR2=\"w.h\""}, std::to_string(value + 10));
  }
}

// A toolkit macro that expands __FILE__ where it is used (CCCL's _CCCL_ASSERT with device
// assertions on): the binary names the user's file, as plain NVRTC names it, never the private
// folder's copy. Failed before: the PTX named /tmp/kjit-includes-XXXXXX/…, a different binary per compile.
BOOST_AUTO_TEST_CASE(a_toolkit_macro_naming_the_file_names_the_users_file)
{
  const std::string d = tmp.path() + "/named";
  put(d + "/src/v.h", "#define V 641\n");
  put(d + "/src/k.cu", "#include <cuda/std/cstddef>\n#include \"v.h\"\n"
                       "extern \"C\" __global__ void k(int* o) { _CCCL_ASSERT(*o != 3, \"three\"); *o = V; }\n");
  settle();
  const std::vector<std::string> options{"-DCCCL_ENABLE_DEVICE_ASSERTIONS"};
  const std::string want = plain(config, d + "/src/k.cu", options).ptx;
  BOOST_TEST_REQUIRE(kjit::deps::binary_holds(want, d + "/src/k.cu"));  // the macro did name the file
  same_as_plain(config, d + "/src/k.cu", options, "641");
  same_as_plain(config, d + "/src/k.cu", options, "641");  // the hit
}

// A macro's <name> is expanded by the compiler: <ROOT/h.h> with ROOT an absolute folder, or
// <EMPTY/abs/h.h> in a "%:define" or "# /**/ define" line, is an absolute name NVRTC opens on disk.
// Failed before: the scanner followed <ROOT/h.h> as written, and missed the two other #defines;
// the second run was served the first value.
BOOST_AUTO_TEST_CASE(a_macro_angle_name_expanded_to_an_absolute_name_is_not_served_stale)
{
  const std::string d = tmp.path() + "/angle";
  const std::vector<std::string> defines{"#define ROOT " + d + "/abs\n#define X <ROOT/h.h>\n",
                                         "#define EMPTY\n%:define X <EMPTY" + d + "/abs/h.h>\n",
                                         "#define EMPTY\n# /**/ define X <EMPTY" + d + "/abs/h.h>\n"};
  int value = 621;
  for (std::size_t i = 0; i < defines.size(); ++i) {
    const std::string src = d + "/src/k" + std::to_string(i) + ".cu";
    put(src, defines[i] + "#include X\nextern \"C\" __global__ void k(int* o) { *o = V; }\n");
    for (int round = 0; round < 2; ++round, ++value) {
      put(d + "/abs/h.h", "#define V " + std::to_string(value) + "\n");
      settle();
      same_as_plain(config, src, {}, std::to_string(value));
    }
  }
}

// The second review of issue 36's rule: directives the scanner did not see as NVRTC does. Each
// was served stale after an edit of the absolute header: a directive split by a comment spanning
// lines, an #include MACRO followed by its last definition while another one is expanded, a
// trigraph forming the directive (C++14).
BOOST_AUTO_TEST_CASE(directives_the_scanner_read_otherwise_are_not_served_stale)
{
  const std::string d = tmp.path() + "/otherwise";
  const std::string abs = d + "/abs/h.h";
  const std::vector<std::pair<std::string, std::vector<std::string>>> programs{
    {"# /*\n*/ include \"" + abs + "\"\n", {}},
    {"#if 1\n#define H \"" + abs + "\"\n#else\n#define H \"x.h\"\n#endif\n#include H\n", {}},
    {"#ifndef H\n#define H \"x.h\"\n#endif\n#include H\n", {"-DH=\"" + abs + "\""}},
    {"?\?=include \"" + abs + "\"\n", {"-std=c++14"}},
  };
  put(d + "/src/x.h", "#define V 1\n");
  int value = 651;
  for (std::size_t i = 0; i < programs.size(); ++i) {
    const std::string src = d + "/src/k" + std::to_string(i) + ".cu";
    put(src, programs[i].first + "extern \"C\" __global__ void k(int* o) { *o = V; }\n");
    for (int round = 0; round < 2; ++round, ++value) {
      put(abs, "#define V " + std::to_string(value) + "\n");
      settle();
      same_as_plain(config, src, programs[i].second, std::to_string(value));
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
