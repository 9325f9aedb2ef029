// A miss of a program whose other arch, or other name expressions, was compiled starts from that
// compile's closed resolution, and so does another program of the same library (issue 36: the
// second arch of a vendored CCCL program, or a second kernel on it, spent 0.7–0.8 s predicting and
// closing the same 1 691 headers again). What it must not lose: a binary equal to plain NVRTC's, a
// header edited since, a name only the new arch asks for, a header the new source reaches another way.
#include <boost/test/unit_test.hpp>

#include "fixture.hpp"

#include "deps/header_edit.hpp"
#include "deps/manifest.hpp"
#include "deps/resolver.hpp"
#include "rtc/compiler.hpp"

#include <regex>
#include <unistd.h>
#include <string>
#include <vector>

using namespace kjit::test;

namespace {

const kjit::Arch k_sm80 = kjit::Arch::parse("sm_80");
const kjit::Arch k_sm90 = kjit::Arch::parse("sm_90");

std::string without_internal_suffixes(const std::string& ptx)
{
  static const std::regex suffix("_INTERNAL_[0-9a-f]+");
  return std::regex_replace(ptx, suffix, "_INTERNAL_");
}

// A small library shaped like CUTLASS's: a function-like macro building <cuda/std/x>, a backend
// folder named by configuration macros, relative includes, a header that says assert.
std::string library(const std::string& root, int scale)
{
  const std::string lib = root + "/lib/include";
  put(lib + "/mylib/mylib.h", "#pragma once\n#define MYLIB_STD_HEADER(header) <cuda/std/header>\n"
                              "#define __MYLIB_BACKEND_ROOT mylib/backend/cuda_impl\n"
                              "#define __MYLIB_OPS <__MYLIB_BACKEND_ROOT/ops.h>\n");
  put(lib + "/mylib/types.h", "#pragma once\n#include \"mylib.h\"\n#include MYLIB_STD_HEADER(cstdint)\n"
                              "namespace mylib { using index_t = cuda::std::int32_t; }\n");
  put(lib + "/mylib/ops.h", "#pragma once\n#include \"types.h\"\n#include __MYLIB_OPS\n");
  put(lib + "/mylib/backend/cuda_impl/ops.h",
      "#pragma once\n#define SCALE " + std::to_string(scale) +
        "\n// assert(x) is what a debug build checks\n"
        "namespace mylib { template <int N> __device__ index_t op(index_t x) { return N * x + SCALE; } }\n");
  return lib;
}

kjit::Program program_on(const std::string& root, const std::string& lib)
{
  const std::string src = root + "/app/k.cu";
  put(src, "#include <mylib/ops.h>\n"
           "template <int N> __global__ void k(int* o) { *o = mylib::op<N>(o[1]); }\n");
  kjit::Program program = kjit::program_from_file(src);
  program.options = {"-I" + lib, "-std=c++17"};
  return program;
}

} // namespace

BOOST_FIXTURE_TEST_SUITE(closure_seed, CacheFixture)

BOOST_AUTO_TEST_CASE(another_arch_of_a_program_compiles_from_the_closure_of_the_first)
{
  const std::string lib = library(tmp.path(), 7001);
  kjit::Program program = program_on(tmp.path(), lib);
  program.name_expressions = {"k<3>"};
  settle();
  {
    kjit::Cache cache(config);  // a process compiles it for sm_80
    BOOST_TEST(kjit::to_string(cache.lookup(program, k_sm80).source) == std::string("compiled"));
  }
  const std::uint64_t listed = kjit::deps::folder_listings();
  kjit::Cache cache(config);  // another one for sm_90
  const kjit::Lookup second = cache.lookup(program, k_sm90);
  BOOST_TEST(kjit::to_string(second.source) == std::string("compiled"));
  BOOST_TEST(kjit::deps::folder_listings() == listed);  // nothing predicted: no folder listed (was 6)
  const kjit::Binary plain = kjit::rtc::compile(config, program, k_sm90);
  BOOST_TEST(without_internal_suffixes(second.binary->ptx) == without_internal_suffixes(plain.ptx));
  BOOST_TEST(second.binary->ptx.find("7001") != std::string::npos);
  BOOST_TEST(second.binary->lowered_names == plain.lowered_names);
  kjit::Cache third(config);
  BOOST_TEST(kjit::to_string(third.lookup(program, k_sm90).source) == std::string("disk"));
  BOOST_TEST(kjit::to_string(third.lookup(program, k_sm80).source) == std::string("disk"));
}

BOOST_AUTO_TEST_CASE(another_arch_finds_its_closure_without_reading_its_names_other_manifests)
{
  // Variants of one source by -D under one name (a JIT's instantiations) each have a manifest; a
  // miss of another arch of one reads only its own, through its seed's row. Before, it read the
  // manifests of the name's entries until one held its seed: a vendored CCCL's are 2.8 MB each.
  const std::string lib = library(tmp.path(), 7001);
  const kjit::Program base = program_on(tmp.path(), lib);
  const auto variant = [&](int v) {
    kjit::Program program = base;
    program.options.push_back("-DVARIANT=" + std::to_string(v));
    program.name_expressions = {"k<3>"};
    return program;
  };
  settle();
  for (int v = 0; v < 6; ++v) {
    kjit::Cache(config).get(variant(v), k_sm80);
  }
  for (int v : {0, 3, 5}) {
    const std::uint64_t listed = kjit::deps::folder_listings();
    const std::uint64_t decoded = kjit::deps::manifests_decoded();
    kjit::Cache cache(config);
    const kjit::Lookup other = cache.lookup(variant(v), k_sm90);
    BOOST_TEST(kjit::to_string(other.source) == std::string("compiled"));
    BOOST_TEST(kjit::deps::folder_listings() == listed);  // seeded
    BOOST_TEST(kjit::deps::manifests_decoded() == decoded + 1);
    const kjit::Binary plain = kjit::rtc::compile(config, variant(v), k_sm90);
    BOOST_TEST(without_internal_suffixes(other.binary->ptx) == without_internal_suffixes(plain.ptx));
  }
}

BOOST_AUTO_TEST_CASE(other_name_expressions_of_a_program_compile_from_its_closure)
{
  const std::string lib = library(tmp.path(), 7001);
  kjit::Program program = program_on(tmp.path(), lib);
  program.name_expressions = {"k<3>"};
  settle();
  kjit::Cache(config).get(program, k_sm80);
  program.name_expressions = {"k<5>"};
  const std::uint64_t listed = kjit::deps::folder_listings();
  kjit::Cache cache(config);
  const kjit::Lookup other = cache.lookup(program, k_sm80);
  BOOST_TEST(kjit::to_string(other.source) == std::string("compiled"));
  BOOST_TEST(kjit::deps::folder_listings() == listed);
  const kjit::Binary plain = kjit::rtc::compile(config, program, k_sm80);
  BOOST_TEST(without_internal_suffixes(other.binary->ptx) == without_internal_suffixes(plain.ptx));
  BOOST_TEST(other.binary->lowered_names == plain.lowered_names);
  // A name expression that may change what the resolution depends on does not share it.
  program.name_expressions = {"k<sizeof(__FILE__)>"};
  kjit::Cache(config).get(program, k_sm80);
  BOOST_TEST(kjit::deps::folder_listings() > listed);
}

BOOST_AUTO_TEST_CASE(a_header_edited_since_the_first_arch_is_compiled_as_it_is_now)
{
  const std::string lib = library(tmp.path(), 7001);
  kjit::Program program = program_on(tmp.path(), lib);
  program.name_expressions = {"k<3>"};
  settle();
  kjit::Cache(config).get(program, k_sm80);
  library(tmp.path(), 7002);  // the backend's header, reached only through configuration macros
  settle();
  kjit::Cache cache(config);
  const kjit::Lookup second = cache.lookup(program, k_sm90);
  BOOST_TEST(second.binary->ptx.find("7002") != std::string::npos);
  BOOST_TEST(second.binary->ptx.find("7001") == std::string::npos);
  kjit::Cache third(config);
  const kjit::Lookup first_again = third.lookup(program, k_sm80);
  BOOST_TEST(kjit::to_string(first_again.source) == std::string("compiled"));
  BOOST_TEST(first_again.binary->ptx.find("7002") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_header_only_the_new_arch_asks_for_is_found)
{
  // The include's name is made from __CUDA_ARCH__ by NVRTC alone: the sm_80 compile asked for
  // arch_800.h, the seed has no arch_900.h, and the sm_90 compile starts over from a prediction.
  const std::string d = tmp.path() + "/per_arch";
  put(d + "/inc/arch_800.h", "#pragma once\n#define V 800123\n");
  put(d + "/inc/arch_900.h", "#pragma once\n#define V 900123\n");
  put(d + "/k.cu", "#define HDR2(a) <arch_##a.h>\n#define HDR(a) HDR2(a)\n#include HDR(__CUDA_ARCH__)\n"
                   "extern \"C\" __global__ void k(int* p) { *p = V; }\n");
  settle();
  kjit::Program program = kjit::program_from_file(d + "/k.cu");
  program.options = {"-I" + d + "/inc"};
  BOOST_TEST(kjit::Cache(config).get(program, k_sm80)->ptx.find("800123") != std::string::npos);
  kjit::Cache cache(config);
  const kjit::Lookup second = cache.lookup(program, k_sm90);
  BOOST_TEST(second.binary->ptx.find("900123") != std::string::npos);
  BOOST_TEST(second.binary->ptx == kjit::rtc::compile(config, program, k_sm90).ptx);
  put(d + "/inc/arch_900.h", "#pragma once\n#define V 900456\n");  // the header the sm_90 key holds
  settle();
  BOOST_TEST(kjit::Cache(config).get(program, k_sm90)->ptx.find("900456") != std::string::npos);
}

// The source `text` at `path`, compiled by a fresh Cache (a new process): whether it listed any
// folder (predicted its headers), and its binary, which must equal plain NVRTC's.
std::pair<bool, std::string> compiled_listing(const kjit::Config& config, const std::string& path,
                                              const std::string& text, const std::vector<std::string>& options)
{
  put(path, text);
  settle();
  kjit::Program program = kjit::program_from_file(path);
  program.options = options;
  const std::uint64_t listed = kjit::deps::folder_listings();
  kjit::Cache cache(config);
  const kjit::Lookup lookup = cache.lookup(program, k_sm80);
  BOOST_TEST(kjit::to_string(lookup.source) == std::string("compiled"), path);
  const bool predicted = kjit::deps::folder_listings() != listed;
  BOOST_TEST(without_internal_suffixes(lookup.binary->ptx) ==
               without_internal_suffixes(kjit::rtc::compile(config, program, k_sm80).ptx),
             path);
  BOOST_TEST(kjit::to_string(kjit::Cache(config).lookup(program, k_sm80).source) == std::string("disk"), path);
  return {predicted, lookup.binary->ptx};
}

BOOST_AUTO_TEST_CASE(another_program_of_a_library_compiles_from_its_closure)
{
  const std::string lib = library(tmp.path(), 7001);
  const std::vector<std::string> options{"-I" + lib, "-std=c++17"};
  const std::string app = tmp.path() + "/app/";
  const std::string head = "#include <mylib/ops.h>\n";
  BOOST_TEST(compiled_listing(config, app + "a.cu", head + "extern \"C\" __global__ void a(int* o) { *o = mylib::op<3>(*o); }\n",
                              options).first);
  // Another kernel on the same include: nothing predicted.
  const auto [predicted, ptx] = compiled_listing(
    config, app + "b.cu", head + "extern \"C\" __global__ void b(int* o) { *o = mylib::op<4>(o[2]) / 3; }\n", options);
  BOOST_TEST(!predicted);  // was predicted (a folder listed)
  BOOST_TEST(ptx.find("7001") != std::string::npos);
  // Fewer includes of the same ones fit too (a source with none has nothing to resolve).
  BOOST_TEST(!compiled_listing(config, app + "c.cu",
                               "#include <mylib/ops.h>\n#include <mylib/ops.h>\n"
                               "extern \"C\" __global__ void c(int* o) { *o = mylib::op<5>(*o); }\n",
                               options)
                .first);
  // Another folder for the sources, or other options: another library context, predicted.
  BOOST_TEST(compiled_listing(config, tmp.path() + "/app2/d.cu", head + "extern \"C\" __global__ void d(int* o) { *o = 1; }\n",
                              options)
               .first);
  BOOST_TEST(compiled_listing(config, app + "e.cu", head + "extern \"C\" __global__ void e(int* o) { *o = 1; }\n",
                              {"-I" + lib, "-std=c++17", "-DX=1"})
               .first);
}

BOOST_AUTO_TEST_CASE(a_source_that_does_not_fit_the_librarys_closure_is_predicted)
{
  const std::string lib = library(tmp.path(), 7001);
  put(lib + "/mylib/extra.h", "#pragma once\n#define EXTRA 4242\n");
  const std::vector<std::string> options{"-I" + lib, "-std=c++17"};
  const std::string app = tmp.path() + "/app/";
  BOOST_TEST(compiled_listing(config, app + "a.cu", "#include <mylib/ops.h>\nextern \"C\" __global__ void a(int* o) { *o = 1; }\n",
                              options)
               .first);
  // Each of these may reach a file the closure does not hold, or reach one by another name.
  const std::vector<std::string> misfits{
    "#include <mylib/ops.h>\n#include <mylib/extra.h>\n",                    // a name the first source lacked
    "#include \"mylib/ops.h\"\n",                                            // the same name, quoted
    "#include <mylib/types.h>\n#include <mylib/ops.h>\n",                     // a header the first reached inside
    "#define EXTRA_H <mylib/extra.h>\n#include <mylib/ops.h>\n",              // a definition
    "#include <mylib/ops.h>\n#if __has_include(<mylib/extra.h>)\n#endif\n", // a probe
  };
  int i = 0;
  for (const auto& misfit : misfits) {
    const std::string name = "m" + std::to_string(i++);
    BOOST_TEST(compiled_listing(config, app + name + ".cu",
                                misfit + "extern \"C\" __global__ void " + name + "(int* o) { *o = 2; }\n", options)
                 .first,
               misfit);
  }
}

BOOST_AUTO_TEST_CASE(a_source_reaching_a_headers_wrapper_or_paste_is_not_served_the_librarys_closure)
{
  // A review's reproducers: the source says none of the words itself; the headers' macros do.
  const std::string lib = tmp.path() + "/lib/include";
  put(lib + "/w.h", "#pragma once\n#define HAS(x) __has_include(x)\n");
  put(lib + "/p.h", "#pragma once\n#define CAT(a, b) a##b\n");
  put(lib + "/opt.h", "#pragma once\n");
  const std::vector<std::string> options{"-I" + lib};
  const std::string app = tmp.path() + "/app/";
  const std::string head = "#include <w.h>\n#include <p.h>\n";
  BOOST_TEST(compiled_listing(config, app + "a.cu", head + "extern \"C\" __global__ void a(int* o) { *o = 1; }\n", options)
               .first);
  // The wrapper: an unseeded resolution scans the source again for it and passes opt.h (7);
  // from the closure, opt.h was not in the private folder (3).
  const auto [wrapped, wrapped_ptx] = compiled_listing(
    config, app + "b.cu",
    head + "extern \"C\" __global__ void b(int* o) {\n#if HAS(<opt.h>)\n*o = 700007;\n#else\n*o = 3;\n#endif\n}\n",
    options);
  BOOST_TEST(wrapped);
  BOOST_TEST(wrapped_ptx.find("700007") != std::string::npos);
  // A paste forming __FILE__ from a piece in the source: the copies must carry the names (9, not
  // the private folder's path's length).
  BOOST_TEST(compiled_listing(config, app + "c.cu",
                              head + "extern \"C\" __global__ void c(int* o) { *o = sizeof(CAT(__FI, LE__)); }\n", options)
               .first);
  // Forming __TIME__: never cached (was stored, and served the first compile's time).
  put(app + "d.cu", head + "extern \"C\" __global__ void d(const char** o) { *o = CAT(__TI, ME__); }\n");
  settle();
  kjit::Program timed = kjit::program_from_file(app + "d.cu");
  timed.options = options;
  kjit::Cache(config).get(timed, k_sm80);
  BOOST_TEST(kjit::to_string(kjit::Cache(config).lookup(timed, k_sm80).source) == std::string("compiled"));
}

BOOST_AUTO_TEST_CASE(a_library_closure_that_names_files_names_them_as_plain_nvrtc_does)
{
  // __FILE__ in a header: every header is a copy carrying its name as the source's includes spell it.
  const std::string lib = tmp.path() + "/lib/include";
  put(lib + "/w/where.h", "#pragma once\n#include \"detail/at.h\"\n"
                          "__device__ inline const char* where() { return __FILE__; }\n");
  put(lib + "/w/detail/at.h", "#pragma once\n__device__ inline const char* at() { return __FILE__; }\n");
  const std::vector<std::string> options{"-I" + lib};
  const std::string app = tmp.path() + "/app/";
  BOOST_TEST(compiled_listing(config, app + "a.cu",
                              "#include <w/where.h>\nextern \"C\" __global__ void a(const char** o) { *o = where(); }\n",
                              options)
               .first);
  const auto [predicted, ptx] = compiled_listing(
    config, app + "b.cu", "#include <w/where.h>\nextern \"C\" __global__ void b(const char** o) { *o = at(); }\n", options);
  BOOST_TEST(!predicted);
  // The header the first source reached through where.h, included directly: another spelling
  // (lib/w/detail/at.h, not lib/w/detail/at.h through "detail/at.h" from where.h): predicted.
  BOOST_TEST(compiled_listing(config, app + "c.cu",
                              "#include <w/detail/at.h>\nextern \"C\" __global__ void c(const char** o) { *o = at(); }\n",
                              options)
               .first);
}

// A project's own header, edited between compiles of a program on a library (an edit-compile
// loop): `text` is the header's body, after its include guard.
struct EditedProgram {
  std::string header;
  kjit::Program program;
};

EditedProgram edited_program(const std::string& root, const std::string& lib, const std::string& includes)
{
  const std::string app = root + "/app";
  put(root + "/sel/README", "a folder of the second test's library\n");
  put(app + "/k.cu", "#include <mylib/ops.h>\n#include \"cfg.h\"\n" + includes +
                       "extern \"C\" __global__ void k(int* o) { *o = mylib::op<3>(o[1]) * FACTOR; o[2] = RESULT; }\n");
  EditedProgram edited{app + "/cfg.h", kjit::program_from_file(app + "/k.cu")};
  edited.program.options = {"-I" + lib, "-I" + root + "/sel", "-std=c++17"};
  return edited;
}

// The header's text now `text`, compiled by a fresh Cache (a new process): whether it closed a
// resolution (predicted its headers), and its PTX, which must equal plain NVRTC's; a hit after.
std::pair<bool, std::string> compiled_after_edit(const kjit::Config& config, const EditedProgram& edited,
                                                 const std::string& text)
{
  put(edited.header, "#pragma once\n" + text);
  settle();
  const std::uint64_t passes = kjit::deps::closure_passes();
  kjit::Cache cache(config);
  const kjit::Lookup lookup = cache.lookup(edited.program, k_sm80);
  BOOST_TEST(kjit::to_string(lookup.source) == std::string("compiled"), text);
  const bool predicted = kjit::deps::closure_passes() != passes;
  BOOST_TEST(without_internal_suffixes(lookup.binary->ptx) ==
               without_internal_suffixes(kjit::rtc::compile(config, edited.program, k_sm80).ptx),
             text);
  BOOST_TEST(kjit::to_string(kjit::Cache(config).lookup(edited.program, k_sm80).source) == std::string("disk"), text);
  return {predicted, lookup.binary->ptx};
}

BOOST_AUTO_TEST_CASE(an_edit_that_keeps_the_closure_compiles_from_it)
{
  // Before, each edit's miss predicted and closed every header again (a vendored CCCL's 1 691:
  // 0.3 s of CPU beside NVRTC, 20 MB of texts read and freed).
  const EditedProgram edited = edited_program(tmp.path(), library(tmp.path(), 7001), "");
  BOOST_TEST(compiled_after_edit(config, edited, "#define FACTOR 11\n#define RESULT 0\n").first);
  for (const std::string value : {"123457", "(2 * 654321 + 1)"}) {
    // A value, a comment and a line of code changed: nothing predicted, nothing listed.
    const auto [predicted, ptx] = compiled_after_edit(
      config, edited, "// edited\n#define FACTOR " + value + "\n#define RESULT 0\n__device__ int unused_" +
                        std::to_string(value.size()) + ";\n");
    BOOST_TEST(!predicted, value);
  }
  put(edited.header, "#pragma once\n#define FACTOR 11\n#define RESULT 0\n");  // back: its entry
  settle();
  BOOST_TEST(kjit::to_string(kjit::Cache(config).lookup(edited.program, k_sm80).source) == std::string("disk"));
}

BOOST_AUTO_TEST_CASE(an_edit_that_may_change_the_closure_predicts_the_headers_again)
{
  // A backend chosen by a macro of the project's header, which a library header's include names.
  const std::string lib = library(tmp.path(), 7001);
  put(lib + "/mylib/extra.h", "#pragma once\n#define EXTRA 4242\n");
  put(tmp.path() + "/sel/sel.h",
      "#pragma once\n#define SEL_ROOT sel_impl/SEL_BACKEND\n#define SEL_HEADER <SEL_ROOT/impl.h>\n#include SEL_HEADER\n");
  put(tmp.path() + "/sel/sel_impl/a/impl.h", "#pragma once\n#define IMPL 111111\n");
  put(tmp.path() + "/sel/sel_impl/b/impl.h", "#pragma once\n#define IMPL 222222\n");
  const EditedProgram edited = edited_program(tmp.path(), lib, "#include <sel.h>\n");
  const std::string base = "#define FACTOR 11\n#define SEL_BACKEND a\n#define RESULT IMPL\n";
  BOOST_TEST(compiled_after_edit(config, edited, base).first);
  const std::vector<std::pair<std::string, std::string>> edits{
    {"#define FACTOR 11\n#define SEL_BACKEND b\n#define RESULT IMPL\n", "222222"},  // the include's macro
    {base + "#include <mylib/extra.h>\n", "111111"},                                  // an include added
    {base + "#if __has_include(<mylib/extra.h>)\n#endif\n", "111111"},              // a probe added
    {base + "__device__ const char* where() { return __FILE__; }\n", "111111"},      // a file's name
    {base + "#define JOIN(a, b) a##b\n", "111111"},                                   // a paste
    {base + "#define EXTRA_H <mylib/extra.h>\n", "111111"},                           // a header's name
  };
  for (const auto& [text, value] : edits) {
    const auto [predicted, ptx] = compiled_after_edit(config, edited, text);
    BOOST_TEST(predicted, text);
    BOOST_TEST(ptx.find(value) != std::string::npos, text);
    put(edited.header, "#pragma once\n" + base);  // the state the next edit is made from (stored)
    settle();
    BOOST_TEST(kjit::to_string(kjit::Cache(config).lookup(edited.program, k_sm80).source) == std::string("disk"));
  }
}

// Found by a review of 2c6b88b, each a wrong binary stored and served: an edit that hides a
// __has_include probe behind a "??/" at the end of a comment line (kjit's view of the text replaces
// trigraphs; NVRTC's C++17 does not, and evaluates the probe), and an edit that adds a call of a
// __has_include wrapper defined in another header (the edited text scanned alone: no wrapper
// known). Neither is taken now: the first is compiled from the disk (a prediction refuses `??/`),
// the second predicted, and both binaries are plain NVRTC's.
BOOST_AUTO_TEST_CASE(an_edit_behind_a_trigraph_or_through_a_probe_wrapper_is_not_taken)
{
  const std::string lib = library(tmp.path(), 7001);
  put(lib + "/mylib/probe.h", "#pragma once\n#define MYLIB_HAS_INCLUDE(x) __has_include(x)\n");
  const EditedProgram edited = edited_program(tmp.path(), lib, "#include <mylib/probe.h>\n");
  put(tmp.path() + "/app/opt.h", "#pragma once\n");  // on disk beside cfg.h; no text names it
  const std::string base = "#include <mylib/probe.h>\n#define FACTOR 11\n#define RESULT 0\n";
  const std::vector<std::string> edits{
    "#include <mylib/probe.h>\n#define FACTOR 11\n// note ?\\?/\n#if __has_include(\"opt.h\")\n#define RESULT 999\n"
    "#else\n#define RESULT 0\n#endif\n",
    "#include <mylib/probe.h>\n#define FACTOR 11\n#if MYLIB_HAS_INCLUDE(\"opt.h\")\n#define RESULT 999\n"
    "#else\n#define RESULT 0\n#endif\n",
  };
  for (const std::string& text : edits) {
    compiled_after_edit(config, edited, base + (&text == &edits.front() ? "" : "// a state of its own\n"));
    std::set<std::string> changed;
    BOOST_TEST(!kjit::deps::edit_keeps_closure("#pragma once\n" + base, "#pragma once\n" + text, changed), text);
    put(edited.header, "#pragma once\n" + text);
    settle();
    const kjit::Lookup found = kjit::Cache(config).lookup(edited.program, k_sm80);
    const std::string plain = kjit::rtc::compile(config, edited.program, k_sm80).ptx;
    BOOST_TEST(plain.find("999") != std::string::npos, text);
    BOOST_TEST(without_internal_suffixes(found.binary->ptx) == without_internal_suffixes(plain), text);
    const kjit::Lookup again = kjit::Cache(config).lookup(edited.program, k_sm80);
    BOOST_TEST(again.binary->ptx.find("999") != std::string::npos, text);
  }
}

// Found by the same review, older than it: a header that calls a __has_include wrapper defined in
// a header it includes was scanned before the wrapper was known, and its probe was never seen. The
// speculation saw NVRTC read opt.h and was refused; the private folder, without opt.h, answered the
// probe false: RESULT 0 stored where plain NVRTC makes 999.
BOOST_AUTO_TEST_CASE(a_probe_wrapper_defined_after_its_first_caller_is_followed)
{
  const std::string lib = library(tmp.path(), 7001);
  put(lib + "/mylib/probe.h", "#pragma once\n#define MYLIB_HAS_INCLUDE(x) __has_include(x)\n");
  const std::string app = tmp.path() + "/app";
  put(app + "/cfg.h", "#pragma once\n#include <mylib/probe.h>\n#if MYLIB_HAS_INCLUDE(\"opt.h\")\n#define RESULT 999\n"
                      "#else\n#define RESULT 0\n#endif\n");
  put(app + "/opt.h", "#pragma once\n");
  put(app + "/k.cu", "#include \"cfg.h\"\nextern \"C\" __global__ void k(int* o) { *o = RESULT; }\n");
  settle();
  kjit::Program program = kjit::program_from_file(app + "/k.cu");
  program.options = {"-I" + lib};
  const kjit::Lookup first = kjit::Cache(config).lookup(program, k_sm80);
  const std::string plain = kjit::rtc::compile(config, program, k_sm80).ptx;
  BOOST_TEST(plain.find("999") != std::string::npos);
  BOOST_TEST(without_internal_suffixes(first.binary->ptx) == without_internal_suffixes(plain));
  const kjit::Lookup again = kjit::Cache(config).lookup(program, k_sm80);
  BOOST_TEST(kjit::to_string(again.source) == std::string("disk"));
  BOOST_TEST(again.binary->ptx.find("999") != std::string::npos);
  // The probed name is the key's: gone, the program is compiled again.
  BOOST_TEST_REQUIRE(::unlink((app + "/opt.h").c_str()) == 0);
  settle();
  const kjit::Lookup without = kjit::Cache(config).lookup(program, k_sm80);
  BOOST_TEST(kjit::to_string(without.source) == std::string("compiled"));
  BOOST_TEST(without.binary->ptx.find("999") == std::string::npos);
}

// Found in the same session, on the way the review opened: a probe the prediction can't see (the
// toolkit's CCCL wrapper called with a macro operand: docs/includes.md, "What is still not
// covered") of a file on disk. The speculation was refused for the file NVRTC read; the private
// folder, without it, answered the probe false (RESULT 0 stored); and with the file gone, the
// entry of its absence did not watch the name, so its return was served RESULT 0 again. Now what
// NVRTC met that the resolution lacks goes into it before the second compile.
BOOST_AUTO_TEST_CASE(a_probe_the_prediction_cannot_see_is_answered_as_on_disk_and_watched)
{
  const std::string app = tmp.path() + "/app";
  put(app + "/cfg.h", "#pragma once\n#include <cuda/std/cstdint>\n#define OPT_H \"opt.h\"\n"
                      "#if _CCCL_HAS_INCLUDE(OPT_H)\n#define RESULT 999\n#else\n#define RESULT 0\n#endif\n");
  put(app + "/k.cu", "#include \"cfg.h\"\nextern \"C\" __global__ void k(int* o) { *o = RESULT; }\n");
  const kjit::Program program = kjit::program_from_file(app + "/k.cu");
  for (const bool present : {true, false, true, false}) {
    if (present) {
      put(app + "/opt.h", "#pragma once\n");
    } else {
      BOOST_TEST_REQUIRE(::unlink((app + "/opt.h").c_str()) == 0);
    }
    settle();
    const kjit::Lookup found = kjit::Cache(config).lookup(program, k_sm80);
    const std::string plain = kjit::rtc::compile(config, program, k_sm80).ptx;
    BOOST_TEST((plain.find("999") != std::string::npos) == present);
    BOOST_TEST(without_internal_suffixes(found.binary->ptx) == without_internal_suffixes(plain), "opt.h present: " << present);
    BOOST_TEST(kjit::to_string(kjit::Cache(config).lookup(program, k_sm80).source) == std::string("disk"));
  }
}

BOOST_AUTO_TEST_CASE(what_an_edit_keeps_of_a_closure)
{
  std::set<std::string> changed;
  const auto keeps = [&](const std::string& before, const std::string& after) {
    changed.clear();
    return kjit::deps::edit_keeps_closure(before, after, changed);
  };
  const std::string base = "#pragma once\n#include <a.h>\n#define N 1\nint f();\n";
  BOOST_TEST(keeps(base, "#pragma once\n/* x */\n#include <a.h>\n#define N 2\nint f(); int g();\n"));
  BOOST_TEST((changed == std::set<std::string>{"N"}));
  BOOST_TEST(keeps(base, base));
  BOOST_TEST(changed.empty());
  const std::vector<std::string> changes_it{
    "#pragma once\n#include <a.h>\n#define N 1\n#define M (N + 4)\n",  // a directive more
    "#pragma once\n#include <a.h>\n#define N 1\n#if M\n#endif\n",
    "#pragma once\n#include <a.h>\n#define N 1 ?\\?/\n2\n",                // a trigraph
    "#pragma once\n#include <a.h>\n#define N 1\n#if F(\"c.h\")\n#endif\n", // a call of a probe wrapper
    "#pragma once\n#include <b.h>\n#define N 1\n",                      // another include
    "#pragma once\n#include \"a.h\"\n#define N 1\n",                    // quoted
    "#pragma once\n#if X\n#include <a.h>\n#endif\n#define N 1\n",       // conditional
    "#pragma once\n#include <a.h>\n#include <a.h>\n#define N 1\n",       // once more
    "#include <a.h>\n#define N 1\n",                                    // no #pragma once
    "#pragma once\n#include <a.h>\n#define N \"a.h\"\n",                 // a header's name
    "#pragma once\n#include <a.h>\n#define N <a.h>\n",
    "#pragma once\n#include <a.h>\n#define N x/y\n",                    // a path
    "#pragma once\n#include <a.h>\n#define N(a) #a\n",                  // stringizing
    "#pragma once\n#include <a.h>\n#define N _Pragma(\"once\")\n",      // once through a macro
    "#pragma once\n#include <a.h>\n#define N 1\nint n = sizeof(__FILE__);\n",
    "#pragma once\n#include <a.h>\n#define N 1\nconst char* t = __TIME__;\n",
    "#pragma once\n#include <a.h>\n#define N 1\nint __FI;\n",          // a piece a paste may join
    "#pragma once\n#include <a.h>\n#define N 1\n#define P(a, b) a ## b\n",
    "#pragma once\n#include <a.h>\n#define N 1\n#define H(x) __has_include(x)\n",
    "#pragma once\n#include <a.h>\n#define N include\n",
    "#pragma once\n#include <a.h>\n#define N 1\n#if __has_include(<c.h>)\n#endif\n",
  };
  for (const std::string& after : changes_it) {
    BOOST_TEST(!keeps(base, after), after);
  }
  // Where another text names a changed macro.
  BOOST_TEST(kjit::deps::names_in_a_directive("#define ROOT lib/N\n", "N"));
  BOOST_TEST(kjit::deps::names_in_a_directive("#include N\n", "N"));
  BOOST_TEST(kjit::deps::names_in_a_directive("  #  if N > 2\n#endif\n", "N"));
  BOOST_TEST(kjit::deps::names_in_a_directive("%:include <N/x.h>\n", "N"));
  BOOST_TEST(!kjit::deps::names_in_a_directive("int x = N; // #include N\n", "N"));
  BOOST_TEST(!kjit::deps::names_in_a_directive("#ifndef N\n#define N 3\n#endif\n#undef N\n#ifdef N\n", "N"));
  BOOST_TEST(!kjit::deps::names_in_a_directive("#define NN 1\n#include <N_x.h>\n", "N"));
}

BOOST_AUTO_TEST_CASE(a_manifests_closure_lines_are_read_back)
{
  kjit::deps::Resolution resolution;
  resolution.headers.push_back({"a.h", "/x/a.h", kjit::util::sha256("a"), {true, 1, 2, 3, 4, 5}, {}, {}});
  resolution.dirs.push_back({"/x", {true, 1, 2, 3, 4, 5}, true, kjit::deps::AbsentNames("b.h\n")});
  kjit::deps::ClosureState closure;
  closure.seed_key = kjit::util::sha256("seed");
  closure.computed_dirs = {"", "/x"};
  closure.climbing_names = {"../y.h", "a\nb/../c.h"};
  closure.once_by_macro = true;
  closure.names_files = true;
  closure.two_names = "/x/a.h is /x/b.h by another name";
  kjit::deps::Resolution without = resolution;
  resolution.closure = closure;
  const auto decoded = kjit::deps::decode_manifest(kjit::deps::encode_manifest({resolution, without}, "ctx"), "ctx");
  BOOST_TEST_REQUIRE(decoded.has_value());
  BOOST_TEST_REQUIRE(decoded->size() == 2u);
  BOOST_TEST_REQUIRE((*decoded)[0].closure.has_value());
  const kjit::deps::ClosureState& back = *(*decoded)[0].closure;
  BOOST_TEST((back.seed_key == closure.seed_key));
  BOOST_TEST((back.computed_dirs == closure.computed_dirs));
  BOOST_TEST((back.climbing_names == closure.climbing_names));
  BOOST_TEST(back.once_by_macro);
  BOOST_TEST(back.names_files);
  BOOST_TEST(back.two_names == closure.two_names);
  BOOST_TEST(!(*decoded)[1].closure.has_value());

  // A manifest of format 5 (no closure lines) still reads; a closure line of one, or one without
  // a seed line before it, is a damaged manifest.
  const auto with_magic = [](const std::string& magic, const std::string& body) {
    return magic + " " + kjit::util::to_hex(kjit::util::checksum(body)) + "\n" + body;
  };
  const std::string text = kjit::deps::encode_manifest({without}, "ctx", kjit::deps::LetGo{false, {}});  // no let-go lines
  const std::string body = text.substr(text.find('\n') + 1);
  BOOST_TEST(kjit::deps::decode_manifest(with_magic("kjit-manifest 5", body), "ctx").has_value());
  BOOST_TEST(!kjit::deps::decode_manifest(with_magic("kjit-manifest 5", body + "seed " + std::string(64, '0') + "\n"), "ctx"));
  BOOST_TEST(!kjit::deps::decode_manifest(with_magic("kjit-manifest 6", body + "names-files\n"), "ctx"));
  BOOST_TEST(kjit::deps::decode_manifest(with_magic("kjit-manifest 6", body + "seed " + std::string(64, '0') + "\nnames-files\n"), "ctx")
               ->front()
               .closure->names_files);
}

BOOST_AUTO_TEST_SUITE_END()
