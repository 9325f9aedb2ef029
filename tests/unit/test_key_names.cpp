// Binaries that name files (-G, -lineinfo, __FILE__) and names only NVRTC forms: a cached result
// is plain NVRTC's on the files, names and working directory now, byte for byte.
#include <boost/test/unit_test.hpp>

#include "fixture.hpp"

#include "deps/formed_names.hpp"
#include "deps/include_scan.hpp"
#include "deps/resolver.hpp"
#include "rtc/compiler.hpp"

#include <chrono>
#include <cstdlib>
#include <optional>
#include <set>
#include <sys/stat.h>
#include <unistd.h>

using namespace kjit::test;

namespace {

const kjit::Arch k_sm80 = kjit::Arch::parse("sm_80");

kjit::Binary plain(const kjit::Config& config, const std::string& src, const std::vector<std::string>& options,
                   const kjit::Arch& arch = k_sm80)
{
  kjit::Program program{src, read_text(src), {}, options, {}};
  return kjit::rtc::compile(config, program, arch);
}

std::shared_ptr<const kjit::Binary> cached(kjit::Cache& cache, const std::string& src,
                                           const std::vector<std::string>& options, const kjit::Arch& arch = k_sm80)
{
  kjit::Program program = kjit::program_from_file(src);
  program.options = options;
  return cache.get(program, arch);
}

// The cached binary is plain NVRTC's: PTX and cubin, byte for byte (the private folder's path
// nowhere).
void same_binary_(kjit::Cache& cache, const kjit::Config& config, const std::string& src,
                  const std::vector<std::string>& options)
{
  const kjit::Binary want = plain(config, src, options);
  const auto got = cached(cache, src, options);
  BOOST_TEST(got->ptx == want.ptx, src);
  BOOST_TEST((got->cubin == want.cubin), src);
  BOOST_TEST(got->ptx.find("kjit-includes-") == std::string::npos);
}

// Where a Cache made now finds `src` with `options` for sm_80: the store, once an earlier Cache
// cached it.
kjit::Source fresh_lookup(const kjit::Config& config, const std::string& src, const std::vector<std::string>& options)
{
  kjit::Cache fresh(config);
  kjit::Program program = kjit::program_from_file(src);
  program.options = options;
  return fresh.lookup(program, k_sm80).source;
}

const char* k_where = "__device__ const char* where() { return __FILE__; }\n";

// Whether `text` may form an absolute name, with the macros it defines itself.
bool forms_absolute(const std::string& text)
{
  kjit::deps::ScanMacros macros;
  kjit::deps::scan_includes(text, {}, &macros);
  return kjit::deps::may_form_absolute_name(text, kjit::deps::OpenEnds(macros));
}

} // namespace

BOOST_FIXTURE_TEST_SUITE(key_names, CacheFixture)

// Item 1: with -G the DWARF compile unit is named by NVRTC from the program name; it named the
// private folder's copy (a path that differs per compile), so two caches and an uncached compile
// gave three binaries. Also without any include (no private folder): the name was made absolute.
BOOST_AUTO_TEST_CASE(device_debug_names_the_program_as_given)
{
  const std::string d = tmp.path() + "/g";
  put(d + "/inc/h.h", std::string("#define V 501\n") + k_where);
  put(d + "/sub/k.cu", "#include <h.h>\n#include \"near.h\"\n"
                       "extern \"C\" __global__ void k(int* o, const char** s) { *o = V + N; *s = where(); }\n");
  put(d + "/sub/near.h", "#define N 1\n");
  put(d + "/sub/lone.cu", "extern \"C\" __global__ void k(const char** s) { *s = __FILE__; }\n");
  settle();
  InDir here(d);
  for (int round = 0; round < 2; ++round) {
    config.cache_dir = tmp.path() + "/cache" + std::to_string(round);
    kjit::Cache cache(config);
    same_binary_(cache, config, "sub/k.cu", {"-Iinc", "-G"});
    same_binary_(cache, config, "sub/lone.cu", {"-G"});
    same_binary_(cache, config, "sub/lone.cu", {});
  }
}

// Item 2: programs that differ only in how a file is spelled (the program name, an -I folder, an
// include name) or in the working directory: where the binary names files, they are different
// binaries, so one cache must not serve one for the other. Failed before: one key for all.
BOOST_AUTO_TEST_CASE(spellings_and_the_working_directory_are_keyed_when_the_binary_names_files)
{
  const std::string d = tmp.path() + "/spelled";
  put(d + "/sub/inc/x.h", std::string("#pragma once\n") + k_where);
  put(d + "/idir/z.h", "#pragma once\n__device__ const char* z() { return __FILE__; }\n");
  put(d + "/sub/k.cu", "#include \"inc//x.h\"\n#include <z.h>\n"
                       "extern \"C\" __global__ void k(const char** s) { s[0] = where(); s[1] = z(); s[2] = __FILE__; }\n");
  put(d + "/sub/j.cu", "#include \"./inc/x.h\"\n#include <z.h>\n"
                       "extern \"C\" __global__ void k(const char** s) { s[0] = where(); s[1] = z(); }\n");
  settle();
  kjit::Cache cache(config);
  {
    InDir here(d);
    for (const auto& [src, dir] : std::vector<std::pair<std::string, std::string>>{
           {"sub/k.cu", "-Iidir"}, {"./sub/k.cu", "-I./idir/"}, {"sub/k.cu", "-I" + d + "/idir"}, {"sub/j.cu", "-Iidir"}}) {
      same_binary_(cache, config, src, {dir});
      same_binary_(cache, config, src, {dir, "-lineinfo"});
    }
  }
  // The same relative names from another working directory: -lineinfo names absolute paths.
  put(d + "/other/sub/j.cu", read_text(d + "/sub/j.cu"));
  put(d + "/other/sub/inc/x.h", read_text(d + "/sub/inc/x.h"));
  put(d + "/other/idir/z.h", read_text(d + "/idir/z.h"));
  settle();
  InDir other(d + "/other");
  same_binary_(cache, config, "sub/j.cu", {"-Iidir", "-lineinfo"});
}

// A program with no include (found by its raw inputs, the direct index) and -lineinfo or -G: its
// binary names the working directory, so another working directory is another binary.
BOOST_AUTO_TEST_CASE(a_program_without_includes_names_the_working_directory)
{
  const std::string d = tmp.path() + "/direct";
  const std::string text = "extern \"C\" __global__ void k(int* o) { *o = 5; }\n";
  put(d + "/a/sub/lone.cu", text);
  put(d + "/b/sub/lone.cu", text);
  settle();
  kjit::Cache cache(config);
  for (const std::string option : {"-lineinfo", "-G"}) {
    for (const char* at : {"/a", "/b"}) {
      InDir here(d + at);
      same_binary_(cache, config, "sub/lone.cu", {option});
    }
  }
}

// Keys of programs whose binary names no file stay portable: the spelling and the working
// directory are not in them (issue 12).
BOOST_AUTO_TEST_CASE(programs_naming_no_file_keep_one_key_for_every_spelling)
{
  const std::string d = tmp.path() + "/portable";
  put(d + "/idir/z.h", "#define V 3\n");
  put(d + "/sub/k.cu", "#include <z.h>\nextern \"C\" __global__ void k(int* o) { *o = V; }\n");
  settle();
  InDir here(d);
  kjit::Cache cache(config);
  std::set<std::string> keys;
  for (const auto& [src, dir] : std::vector<std::pair<std::string, std::string>>{
         {"sub/k.cu", "-Iidir"}, {"./sub/k.cu", "-I./idir/"}, {d + "/sub/k.cu", "-I" + d + "/idir"}}) {
    kjit::Program program = kjit::program_from_file(src);
    program.options = {dir};
    cache.get(program, k_sm80);
    keys.insert(cache.prepare(program, k_sm80).key());
  }
  BOOST_TEST(keys.size() == 1u);
}

// Item 3: one file by two names (a hard link, a symlinked folder), included twice, in a binary
// naming files: plain NVRTC names each inclusion by its own name; the one copy named both by the
// first. A hard link without #pragma once now gets a copy per name (cached); with #pragma once
// (one file to NVRTC, by inode) or through a symlinked folder (one path) it is compiled from disk.
BOOST_AUTO_TEST_CASE(a_file_by_two_names_is_named_by_each)
{
  const std::string d = tmp.path() + "/two";
  put(d + "/hard.cu", "__device__ const char* names =\n#include \"a.h\"\n#include \"b.h\"\n;\n"
                      "extern \"C\" __global__ void k(const char** s) { *s = names; }\n");
  put(d + "/a.h", "__FILE__ \", \"\n");
  BOOST_TEST_REQUIRE(::link((d + "/a.h").c_str(), (d + "/b.h").c_str()) == 0);
  put(d + "/once.cu", "#include \"o.h\"\n#include \"p.h\"\n"
                      "extern \"C\" __global__ void k(const char** s) { *s = where(); }\n");
  put(d + "/o.h", std::string("#pragma once\n") + k_where);
  BOOST_TEST_REQUIRE(::link((d + "/o.h").c_str(), (d + "/p.h").c_str()) == 0);
  put(d + "/sym.cu", "__device__ const char* names =\n#include \"lnk/c.h\"\n#include \"real/c.h\"\n;\n"
                     "extern \"C\" __global__ void k(const char** s) { *s = names; }\n");
  put(d + "/real/c.h", "__FILE__ \"; \"\n");
  BOOST_TEST_REQUIRE(::symlink("real", (d + "/lnk").c_str()) == 0);
  settle();
  std::vector<std::string> uncached;
  kjit::set_log_sink([&uncached](std::string_view line) {
    if (line.find("not cached") != std::string_view::npos) {
      uncached.emplace_back(line);
    }
  });
  kjit::Cache cache(config);
  for (int round = 0; round < 2; ++round) {
    for (const char* src : {"/hard.cu", "/once.cu", "/sym.cu"}) {
      same_binary_(cache, config, d + src, {});
    }
  }
  kjit::set_log_sink({});
  // once.cu and sym.cu, in both rounds: compiled from the disk, never stored (before, the second
  // round found what the first had stored: key_names/a_compile_from_the_disk_for_two_names_*)
  BOOST_TEST(uncached.size() == 4u);
  for (const auto& line : uncached) {
    BOOST_TEST(line.find("hard.cu") == std::string::npos, line);
  }
}

// A program compiled from the files on disk because one copy can't carry a file's two names (a
// hard link with #pragma once, here) is not cached: NVRTC read the disk itself, which may hold
// more than kjit resolved (here q.h, reached by a computed include only NVRTC follows; or a header
// edited after kjit read it). Before, the log said "not cached" but the binary was stored under
// the key of the headers kjit had read, without q.h: after q.h was edited, its old binary (561)
// was served, from memory and from disk.
BOOST_AUTO_TEST_CASE(a_compile_from_the_disk_for_two_names_is_not_cached)
{
  const std::string d = tmp.path() + "/twice";
  put(d + "/k.cu", "#include \"o.h\"\n#include \"p.h\"\n#define STR(x) #x\n#define HDR(x) STR(x)\n#include HDR(q.h)\n"
                   "extern \"C\" __global__ void k(int* o) { *o = V; }\n");
  put(d + "/o.h", std::string("#pragma once\n") + k_where);
  BOOST_TEST_REQUIRE(::link((d + "/o.h").c_str(), (d + "/p.h").c_str()) == 0);
  put(d + "/q.h", "#define V 561\n");
  settle();
  const kjit::Arch arch = kjit::Arch::parse("compute_80");
  const auto value = [](const std::string& ptx) {
    return ptx.find("561;") != std::string::npos ? 561 : ptx.find("562;") != std::string::npos ? 562 : 0;
  };
  {
    kjit::Cache cache(config);
    BOOST_TEST(value(cached(cache, d + "/k.cu", {}, arch)->ptx) == 561);
    BOOST_TEST(value(cached(cache, d + "/k.cu", {}, arch)->ptx) == 561);
    put(d + "/q.h", "#define V 562\n");
    settle();
    BOOST_TEST(value(plain(config, d + "/k.cu", {}, arch).ptx) == 562);
    BOOST_TEST(value(cached(cache, d + "/k.cu", {}, arch)->ptx) == 562);
  }
  kjit::Cache cache(config);
  BOOST_TEST(value(cached(cache, d + "/k.cu", {}, arch)->ptx) == 562);
}

// A -D value naming the file (-DF=__FILE__, __BASE_FILE__) makes the binary name the program as
// given, as __FILE__ in the source does: the key must hold the name. Before, options were not
// looked at: "bb/k.cu" was served the binary of "a/k.cu" (same source, same options: one key).
BOOST_AUTO_TEST_CASE(a_define_naming_the_file_keys_the_name)
{
  const std::string source = "__device__ const char f[] = F;\nextern \"C\" __global__ void k(char* o) { *o = f[0] + f[1]; }\n";
  const kjit::Arch arch = kjit::Arch::parse("compute_80");
  kjit::Cache cache(config);
  for (const char* define : {"-DF=__FILE__", "-DF=__BASE_FILE__"}) {
    for (const char* name : {"a/k.cu", "bb/k.cu"}) {
      const kjit::Program program{name, source, {}, {define}, {}};
      BOOST_TEST(cache.get(program, arch)->ptx == kjit::compile(program, arch).ptx, name << " " << define);
    }
  }
}

// Item 4: an absolute include name formed only inside NVRTC (a function-like macro) is opened by
// NVRTC on disk; kjit never hashed it, so after an edit the old binary was served.
BOOST_AUTO_TEST_CASE(an_absolute_name_only_nvrtc_forms_is_not_served_stale)
{
  const std::string d = tmp.path() + "/formed";
  put(d + "/src/k.cu", "#define S(x) #x\n#define P(x) S(" + d + "/abs/x)\n#include P(h.h)\n"
                       "extern \"C\" __global__ void k(int* o) { *o = V; }\n");
  for (const int value : {511, 512}) {
    put(d + "/abs/h.h", "#define V " + std::to_string(value) + "\n");
    settle();
    kjit::Cache cache(config);
    const auto got = cached(cache, d + "/src/k.cu", {}, kjit::Arch::parse("compute_80"));
    BOOST_TEST(got->ptx.find(std::to_string(value)) != std::string::npos);
    BOOST_TEST(got->ptx == plain(config, d + "/src/k.cu", {}, kjit::Arch::parse("compute_80")).ptx);
  }
}

// kjit explain says why a binary naming files missed: the working directory it names changed.
BOOST_AUTO_TEST_CASE(explain_names_the_working_directory_a_binary_names)
{
  const std::string d = tmp.path() + "/explained";
  for (const char* at : {"/a", "/b"}) {
    put(d + at + "/sub/x.h", "#define V 7\n");
    put(d + at + "/sub/k.cu", "#include \"x.h\"\nextern \"C\" __global__ void k(int* o) { *o = V; }\n");
  }
  settle();
  kjit::Cache cache(config);
  kjit::Program program = kjit::program_from_file(d + "/a/sub/k.cu");
  program.name = "sub/k.cu";
  program.options = {"-lineinfo"};
  {
    InDir here(d + "/a");
    cache.get(program, k_sm80);
    BOOST_TEST(cache.explain(program, k_sm80).hit);
  }
  InDir here(d + "/b");
  const kjit::MissExplanation why = cache.explain(program, k_sm80);
  BOOST_TEST(!why.hit);
  BOOST_TEST_REQUIRE(why.differences.size() == 1u);
  BOOST_TEST(why.differences[0] == "named-from " + d + "/a -> " + d + "/b");
}

// What may form an absolute name, and what CCCL's own headers do that must not count (a lone '/'
// handed to a macro, division, comments): the whole toolkit tree matches only in NVTX's host code.
BOOST_AUTO_TEST_CASE(what_may_form_an_absolute_name)
{
  for (const char* text : {"#define P(x) S(/abs/x)\n", "#define R /usr\n", "#define R(x) /usr/x\n", "X(a, /opt/x.h)",
                           "#define A <\\\n/usr/x.h>\n", "const char* s = \"/tmp/x\";", "F( /..)",
                           "#define EMPTY\n#include P(EMPTY /abs/x.h)\n", "#define EMPTY\n#define W EMPTY/abs/x.h\n",
                           "#define E\n#define W(x) S(x E \\\n /abs)\n"}) {
    BOOST_TEST(forms_absolute(text), text);
  }
  for (const char* text : {"_DEFINE_BINARY(/)\n", "MAKE(/, divides)", "x = a / b; y = (a)/b;", "// (/usr/x)\n",
                           "/* \"/usr\" */ f(1'000, 2)", "c = '/'; d = '\"'; e = (/=", "#define D 1 / 2\n",
                           "#include <cuda/std/cstddef>\n#include_next <a/b.h>\n", "x = a /b; y = a/b;\n#if A/B\n#endif\n",
                           "#define D 1\nint f() { return a/b; }\n"}) {
    BOOST_TEST(!forms_absolute(text), text);
  }
}

// Issue 36: what real libraries' computed includes do forms no absolute name, unless a name before
// the '/' may really expand to nothing where it is used.
BOOST_AUTO_TEST_CASE(library_computed_includes_form_no_absolute_name)
{
  for (const char* text : {
         // CUTLASS (cutlass/cutlass.h, then 42 headers)
         "#define CUDA_STD_HEADER(header) <cuda/std/header>\n#include CUDA_STD_HEADER(cstdint)\n",
         // Thrust (thrust/detail/config/device_system.h, thrust/universal_vector.h)
         "#define __THRUST_DEVICE_SYSTEM_NAMESPACE cuda\n"
         "#define __THRUST_DEVICE_SYSTEM_ROOT thrust/system/__THRUST_DEVICE_SYSTEM_NAMESPACE\n"
         "#define __THRUST_DEVICE_SYSTEM_VECTOR_HEADER <__THRUST_DEVICE_SYSTEM_ROOT/vector.h>\n"
         "#include __THRUST_DEVICE_SYSTEM_VECTOR_HEADER\n",
         // a configuration macro naming a folder, and one defined as another non-empty one
         "#define LIB_ROOT mylib/v2\n#define ROOT LIB_ROOT\n#define H(x) <ROOT/x.h>\n#include H(core)\n",
         // a macro defined as itself stays itself
         "#define SELF SELF\n#define H <SELF/x.h>\n"}) {
    BOOST_TEST(!forms_absolute(text), text);
  }
  for (const char* text : {
         "#define H(dir) <dir/x.h>\n",                              // a parameter: H() makes </x.h>
         "#define H(...) <__VA_ARGS__/x.h>\n",                      // the same through __VA_ARGS__
         "#define cuda\n#define CUDA_STD_HEADER(header) <cuda/std/header>\n",  // `cuda` defined empty
         "#define E1\n#define E2 E1 E1\n#define H <E2/usr/x.h>\n",  // empty through another macro
         "#define F()\n#define E F()\n#define H <E/usr/x.h>\n",     // a call that may expand to nothing
         "#define H <__UNSEEN_TOOLKIT_MACRO/usr/x.h>\n",            // reserved, defined by nothing scanned
         "#define P(x) <x##/usr/x.h>\n",                            // pasted onto an empty argument
         // The review of this rule (each served stale before it was added):
         "#define E()\n#define HDR <E()/tmp/abs.h>\n",               // after a call that expands to nothing
         "#define S(x) #x\n#define XS(x) S(x)\n#define E()\n#define HDR XS(E()/tmp/abs.h)\n",
         "#define SL() /\n#define HDR <SL()tmp/abs.h>\n",             // a body that is a lone '/'
         "#define HDR </\\\ntmp/abs.h>\n",                          // a splice after the '/'
         "#define P(x) <x %:%:/tmp/abs.h>\n#define HDR P()\n",       // a paste spelled %:%:
         "#define ZE\n#ifdef N\n#define ANC VICTIM\n#else\n#define ANC ZE\n#endif\n#define VICTIM ANC\n"
         "#define ASK ANC 1\n#define UNUSED ASK/w\n#define HDR <VICTIM/tmp/abs.h>\n",  // a cycle decided late
         "#define DROP(x)\n#define HDR DROP(a'\"')</tmp/abs.h>\n",   // a prefixed character literal
         "#define DROP(x)\n#define HDR DROP(R\"(\")\")</tmp/abs.h>\n",  // a raw string
         "#define HDR0 \"\\\n/tmp/abs.h\"\n",                       // a splice after the quote
         "#define HDR0 \"/\\\ntmp/abs.h\"\n",                       // a splice after "/
         // The second review (each served stale before):
         "#define EAT(x)\n#define F() EAT(.)\n#define H <F()/tmp/abs.h>\n",  // a body ending in a call
         "#define EAT(x)\n#define F() EAT\n#define H <F()(x)/tmp/abs.h>\n",  // a group after a call
         "#define EAT(x)\n#define H EAT(1'\"') \"/tmp/abs.h\"\n",     // a quote after a number, no digit after
         "#define E\n#define H <E\\\r\n/tmp/abs.h>\n",               // a CRLF splice
         "#define EF()\n#ifdef N\n#define E(x) (x+1)\n#else\n#define E EF\n#endif\n#define H <E()/tmp/abs.h>\n",
         "#define LT <\n#define H LT/tmp/abs.h>\n"}) {                // a name expanding to '<'
    BOOST_TEST(forms_absolute(text), text);
  }
  // What stays followed: division by a number after NVRTC's predefined macros, a known call.
  for (const char* text : {"#define H(name) <name.h>\n#define MAJOR (__CUDA_ARCH__/100)\n",
                           "#define H(name) <name.h>\n#define N (sizeof(int)/4)\n"}) {
    BOOST_TEST(!forms_absolute(text), text);
  }
}

// A name only a toolkit header defines empty (CUDARTAPI in cuda_runtime_api.h) may expand to
// nothing; a name the toolkit defines with a value, or not at all, stays itself.
BOOST_AUTO_TEST_CASE(names_the_toolkit_defines_are_read_from_its_headers)
{
  const std::string toolkit = kjit::current_config().cuda_home.empty() ? "/usr/local/cuda" : kjit::current_config().cuda_home;
  const kjit::deps::ScanMacros& macros = kjit::deps::toolkit_macros({toolkit + "/include"});
  BOOST_TEST_REQUIRE(macros.values.count("CUDARTAPI") == 1u);
  const kjit::deps::ScanMacros none;
  const kjit::deps::OpenEnds ends(none, [&] { return &macros; });
  BOOST_TEST(ends.ask("CUDARTAPI"));
  BOOST_TEST(!ends.ask("CUDART_VERSION"));
  BOOST_TEST(!ends.ask("cuda"));
  BOOST_TEST(kjit::deps::may_form_absolute_name("#define HDR <CUDARTAPI/tmp/abs.h>\n", ends));
  BOOST_TEST(!kjit::deps::may_form_absolute_name("#define H(header) <cuda/std/header>\n", ends));
  // A user definition does not hide the toolkit's empty one (#ifndef CUDARTAPI keeps NVRTC's).
  kjit::deps::ScanMacros user;
  user.values["CUDARTAPI"].insert("nonempty");
  const kjit::deps::OpenEnds both(user, [&] { return &macros; });
  BOOST_TEST(both.ask("CUDARTAPI"));
}

// Review (rkeys) 1: `static_assert` is no `assert`: it names no file, so its program's key stays
// portable. Failed before: a project copied elsewhere (absolute names) got a second key.
BOOST_AUTO_TEST_CASE(static_assert_alone_keeps_the_key_portable)
{
  std::set<std::string> keys;
  kjit::Cache cache(config);
  for (const char* at : {"/one", "/two"}) {
    const std::string d = tmp.path() + "/moved" + at;
    put(d + "/inc/v.h", "#define V 41\nstatic_assert(V > 0, \"positive\");\n");
    put(d + "/k.cu", "#include <v.h>\nstatic_assert(V == 41, \"v\");\nextern \"C\" __global__ void k(int* o) { *o = V; }\n");
    settle();
    kjit::Program program = kjit::program_from_file(d + "/k.cu");
    program.options = {"-I" + d + "/inc"};
    cache.get(program, k_sm80);
    keys.insert(cache.prepare(program, k_sm80).key());
  }
  BOOST_TEST(keys.size() == 1u);
}

// Review (rkeys) 2: __BASE_FILE__ and __builtin_FILE() name files as __FILE__ does (__BASE_FILE__
// the program, which #line does not rename). Failed before: the PTX named the private folder.
BOOST_AUTO_TEST_CASE(base_file_and_builtin_file_name_the_files_as_plain_nvrtc)
{
  const std::string d = tmp.path() + "/base";
  put(d + "/inc/b.h", "__device__ const char* b() { return __builtin_FILE(); }\n");
  put(d + "/sub/k.cu", "#include <b.h>\n"
                       "extern \"C\" __global__ void k(const char** s) { s[0] = __BASE_FILE__; s[1] = b(); }\n");
  put(d + "/sub/j.cu", "#include <b.h>\nextern \"C\" __global__ void k(const char** s) { s[0] = b(); }\n");
  settle();
  InDir here(d);
  kjit::Cache cache(config);
  for (const char* src : {"sub/k.cu", "sub/j.cu"}) {
    same_binary_(cache, config, src, {"-Iinc"});
    same_binary_(cache, config, src, {"-Iinc", "-lineinfo"});
  }
}

// __BASE_FILE__ only in a header (the program names it through the header): the compile asks
// the resolution whether a header names the program (Resolver::headers_name_program(), answered
// ahead by a speculating miss's preparing thread); from copies, a stub names the program as NVRTC
// on disk does.
BOOST_AUTO_TEST_CASE(base_file_in_a_header_names_the_program_as_plain_nvrtc)
{
  const std::string d = tmp.path() + "/base_header";
  put(d + "/inc/n.h", "__device__ const char* base() { return __BASE_FILE__; }\n");
  put(d + "/sub/k.cu", "#include <n.h>\nextern \"C\" __global__ void k(const char** s) { s[0] = base(); }\n");
  settle();
  InDir here(d);
  kjit::Cache cache(config);
  same_binary_(cache, config, "sub/k.cu", {"-Iinc"});  // compiled from the disk while resolved
  same_binary_(cache, config, "sub/k.cu", {"-Iinc", "-lineinfo"});  // from copies: its name is known
  for (const std::vector<std::string>& options : {std::vector<std::string>{"-Iinc"}, {"-Iinc", "-lineinfo"}}) {
    BOOST_TEST((fresh_lookup(config, "sub/k.cu", options) == kjit::Source::disk));  // both cached
  }
}

// Review (rkeys) 3: a header only a retry finds (NVRTC forms its name) whose text names files
// (assert): the copies are made again, named. Failed before: compiled from the disk and never
// cached, in every process.
BOOST_AUTO_TEST_CASE(a_header_naming_files_found_by_a_retry_is_cached)
{
  const std::string d = tmp.path() + "/late";
  put(d + "/inc/a.h", std::string("#define V 17\n") + k_where);
  put(d + "/k.cu", "#define CAT_(a, b) a##b\n#define CAT(a, b) CAT_(a, b)\n#define STR_(x) #x\n#define STR(x) STR_(x)\n"
                   "#include STR(CAT(a, .h))\n"
                   "extern \"C\" __global__ void k(int* o, const char** s) { *o = V; *s = where(); }\n");
  settle();
  InDir here(d);
  {
    kjit::Cache cache(config);
    same_binary_(cache, config, "k.cu", {"-Iinc"});
  }
  kjit::Cache cache(config);
  kjit::Program program = kjit::program_from_file("k.cu");
  program.options = {"-Iinc"};
  const kjit::Lookup found = cache.lookup(program, k_sm80);
  BOOST_TEST((found.source == kjit::Source::disk));
  BOOST_TEST(found.binary->ptx == plain(config, "k.cu", {"-Iinc"}).ptx);
}

// Review (rkeys) 4: an in-memory header's macro that expands to __FILE__ in the main source names
// the program. Failed before: not seen (only the source and disk headers were read), so the PTX
// named the private folder's copy and two program names shared one key.
BOOST_AUTO_TEST_CASE(an_in_memory_header_naming_files_is_seen)
{
  const std::string d = tmp.path() + "/memory";
  put(d + "/inc/v.h", "#define V 23\n");
  const std::string text = "#include \"w.h\"\n#include <v.h>\n"
                           "extern \"C\" __global__ void k(int* o, const char** s) { *o = V; *s = WHERE; }\n";
  settle();
  InDir here(d);
  kjit::Cache cache(config);
  for (const char* name : {"a.cu", "b.cu"}) {
    const kjit::Program program{name, text, {{"w.h", "#define WHERE __FILE__\n"}}, {"-Iinc"}, {}};
    kjit::Program disk = program;
    disk.options = {"-I" + d + "/inc"};
    const kjit::Binary want = kjit::rtc::compile(config, disk, k_sm80);
    std::string bytes;  // PTX spells a string as its bytes: "97, 46, 99, 117"
    for (const char* at = name; *at != '\0'; ++at) {
      bytes += (bytes.empty() ? "" : ", ") + std::to_string(static_cast<int>(*at));
    }
    BOOST_TEST(want.ptx.find("{" + bytes + "}") != std::string::npos);
    BOOST_TEST(cache.get(program, k_sm80)->ptx == want.ptx, name);
  }
}

// Review (rkeys) 5: a long run of blanks at a line's start was read once per blank (a #define
// looked for at each): 300 KB of them took 17 s of CPU. Now once.
BOOST_AUTO_TEST_CASE(what_may_form_an_absolute_name_reads_blanks_once)
{
  const std::string text = std::string(200000, ' ') + "\n#define R /usr\n";
  const auto start = std::chrono::steady_clock::now();
  BOOST_TEST(forms_absolute(text));
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
  BOOST_TEST(took.count() < 1500);
}

// Review (rkeys) 6: two spellings of one program in one resolution context ("k.cu", "./k.cu")
// shared one manifest, whose entries carry the names of the spelling that recorded them: each
// found the other's entry first, made a key no entry has, and compiled again, every time.
BOOST_AUTO_TEST_CASE(two_spellings_in_one_context_each_keep_their_hits)
{
  const std::string d = tmp.path() + "/alternate";
  put(d + "/h.h", std::string("#define V 29\n") + k_where);
  put(d + "/k.cu", "#include \"h.h\"\nextern \"C\" __global__ void k(int* o, const char** s) { *o = V; *s = where(); }\n");
  settle();
  InDir here(d);
  for (int round = 0; round < 3; ++round) {
    for (const char* src : {"k.cu", "./k.cu"}) {
      kjit::Cache cache(config);  // a new process: the manifests from the store
      kjit::Program program = kjit::program_from_file(src);
      const kjit::Lookup found = cache.lookup(program, k_sm80);
      BOOST_TEST(found.binary->ptx == plain(config, src, {}).ptx, src);
      if (round > 0) {
        BOOST_TEST((found.source == kjit::Source::disk), src << " round " << round);
      }
    }
  }
}

// Review (rkeys) 7: the -G stub puts every header one include level deeper: __INCLUDE_LEVEL__ in a
// header was 2 for 1 (only the main source's was checked). Now compiled from the disk.
BOOST_AUTO_TEST_CASE(the_stub_keeps_a_headers_include_level)
{
  const std::string d = tmp.path() + "/level";
  put(d + "/inc/l.h", "__device__ int level() { return __INCLUDE_LEVEL__ * 1000 + 7; }\n");
  put(d + "/k.cu", "#include <l.h>\nextern \"C\" __global__ void k(int* o) { *o = level(); }\n");
  settle();
  InDir here(d);
  kjit::Cache cache(config);
  same_binary_(cache, config, "k.cu", {"-Iinc", "-G"});
  same_binary_(cache, config, "k.cu", {"-Iinc", "-G"});
}

// Review (rkeys) 8: NVRTC makes a relative name absolute with $PWD when it names the working
// directory (a symlink to it, as a shell's cd through a link leaves it), else with getcwd(); the
// key had getcwd() only, so a run through the link was served the real path's binary.
BOOST_AUTO_TEST_CASE(the_working_directory_is_named_as_nvrtc_names_it)
{
  const std::string d = tmp.path() + "/pwd";
  put(d + "/real/x.h", "#define V 31\n");
  put(d + "/real/k.cu", "#include \"x.h\"\nextern \"C\" __global__ void k(int* o) { *o = V; }\n");
  BOOST_TEST_REQUIRE(::symlink("real", (d + "/link").c_str()) == 0);
  settle();
  const char* before = std::getenv("PWD");
  const std::string saved = before != nullptr ? before : "";
  kjit::Cache cache(config);
  {
    InDir here(d + "/real");
    for (const std::string& pwd : {d + "/real", d + "/link", d + "/real"}) {
      ::setenv("PWD", pwd.c_str(), 1);
      for (const char* option : {"-lineinfo", "-G"}) {
        const auto got = cached(cache, "k.cu", {option});
        BOOST_TEST(got->ptx == plain(config, "k.cu", {option}).ptx, pwd << " " << option);
      }
    }
  }
  ::setenv("PWD", saved.c_str(), 1);
}

// A prepared program whose binary names the working directory (-lineinfo, -G) is served for the
// working directory now, as get(program) is. Before, its key (made with the folder of prepare())
// was looked up as it was, after a chdir too: the binary named the other folder.
BOOST_AUTO_TEST_CASE(a_prepared_program_naming_the_working_directory_is_served_for_the_one_now)
{
  put(tmp.path() + "/a/.keep", "");
  put(tmp.path() + "/b/.keep", "");
  kjit::Cache cache(config);
  for (const char* option : {"-lineinfo", "-G"}) {
    const kjit::Program program{"k.cu", "extern \"C\" __global__ void k(int* o) { *o = 1; }\n", {}, {option}, {}};
    std::optional<kjit::PreparedProgram> prepared;
    {
      InDir in(tmp.path() + "/a");
      prepared.emplace(cache.prepare(program, k_sm80));
      BOOST_TEST(cache.get(*prepared)->ptx == kjit::rtc::compile(config, program, k_sm80).ptx);
    }
    InDir in(tmp.path() + "/b");
    const kjit::Binary want = kjit::rtc::compile(config, program, k_sm80);
    BOOST_TEST(cache.get(*prepared)->ptx == want.ptx, option);
    BOOST_TEST(cache.get(program, k_sm80)->ptx == want.ptx, option);
    BOOST_TEST(cache.lookup(*prepared).binary->ptx == want.ptx, option);
  }
}

// Issue 36: headers may be symlinks in the private folder, but not when the binary may name files:
// another header's macro (WHERE, defined where __FILE__ is written) puts use.h's name into the
// binary, which must be plain NVRTC's, and cached.
BOOST_AUTO_TEST_CASE(a_linked_headers_name_reached_through_another_headers_macro_is_named)
{
  const std::string d = tmp.path() + "/linked";
  put(d + "/inc/names.h", "#define WHERE __FILE__\n");
  put(d + "/inc/use.h", "__device__ const char* where_use() { return WHERE; }\n");
  put(d + "/k.cu", "#include <names.h>\n#include <use.h>\n"
                   "extern \"C\" __global__ void k(const char** s) { *s = where_use(); }\n");
  settle();
  InDir here(d);
  const std::vector<std::string> options{"-Iinc"};
  {
    kjit::Cache cache(config);
    same_binary_(cache, config, "k.cu", options);
  }
  BOOST_TEST(kjit::deps::binary_holds(plain(config, "k.cu", options).ptx, "inc/use.h"));  // the name reaches it
  BOOST_TEST((fresh_lookup(config, "k.cu", options) == kjit::Source::disk));
}

// Issue 38: a header naming its file across a splice (sizeof(__FI\⏎LE__): the length of the
// name, 70 for the private folder's copy against 6 on disk) named the private folder in the
// binary, which the check for the folder's path as bytes did not see. Looked for as the
// preprocessor sees the text, the header is named: plain NVRTC's binary, cached.
BOOST_AUTO_TEST_CASE(a_name_spelled_across_a_splice_is_named)
{
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases{
    {"__device__ int name_size() { return sizeof(__FI\\\nLE__); }\n", {"-Iinc"}},
    {"__device__ int name_size() { return sizeof(__FI??/\nLE__); }\n", {"-Iinc", "-std=c++14"}},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const std::string d = tmp.path() + "/spliced" + std::to_string(i);
    put(d + "/inc/h.h", cases[i].first);
    put(d + "/k.cu", "#include <h.h>\nextern \"C\" __global__ void k(int* o) { *o = name_size(); }\n");
    settle();
    InDir here(d);
    {
      kjit::Cache cache(config);
      same_binary_(cache, config, "k.cu", cases[i].second);  // 51 for 8, before
    }
    // A trigraph before C++17 is refused ("directives kjit does not see"): compiled, not cached.
    BOOST_TEST(((fresh_lookup(config, "k.cu", cases[i].second) == kjit::Source::disk) == (i == 0)), i);
  }
}

// `#pragma on\⏎ce` is `#pragma once`: a file reached by two names (a hard link) is one file to
// NVRTC, and must be one file in the private folder too.
BOOST_AUTO_TEST_CASE(once_is_seen_across_a_splice)
{
  BOOST_TEST(kjit::deps::must_be_one_copy("#pragma on\\\nce\n"));
  BOOST_TEST(kjit::deps::must_be_one_copy("#pragma on\\\r\nce\n"));
  BOOST_TEST(!kjit::deps::must_be_one_copy("#pragma message(\"on\")\n"));
}

// Issue 38: a token paste forms the word: `CAT(__FI,LE__)` is __FILE__ (the name's size, or one of
// its characters, was the private folder's: 70 for 6). The header is then named, as for the word.
BOOST_AUTO_TEST_CASE(a_name_formed_by_a_token_paste_is_named)
{
  const std::string d = tmp.path() + "/pasted";
  put(d + "/inc/cat.h", "#define CAT_(a, b) a##b\n#define CAT(a, b) CAT_(a, b)\n");
  put(d + "/inc/h.h", "__device__ int name_size() { return sizeof(CAT(__FI, LE__)); }\n"
                      "__device__ char name_char() { return CAT(__FI, LE__)[4]; }\n");
  put(d + "/k.cu", "#include <cat.h>\n#include <h.h>\n"
                   "extern \"C\" __global__ void k(int* o) { o[0] = name_size(); o[1] = name_char(); }\n");
  settle();
  InDir here(d);
  {
    kjit::Cache cache(config);
    same_binary_(cache, config, "k.cu", {"-Iinc"});
  }
  BOOST_TEST((fresh_lookup(config, "k.cu", {"-Iinc"}) == kjit::Source::disk));
}

// `#if CAT(__has_, include)("opt.h")` probes a file kjit can't follow: compiled from the disk, not
// cached (a fresh compile saw the file appear; a cached one served its absence).
BOOST_AUTO_TEST_CASE(a_probe_formed_by_a_token_paste_is_not_cached)
{
  const std::string d = tmp.path() + "/pasted_probe";
  put(d + "/k.cu", "#define CAT_(a, b) a##b\n#define CAT(a, b) CAT_(a, b)\n"
                   "#if CAT(__has_, include)(\"opt.h\")\n#include \"opt.h\"\n#else\n#define OPT 1\n#endif\n"
                   "extern \"C\" __global__ void k(int* o) { *o = OPT; }\n");
  settle();
  InDir here(d);
  kjit::Program program = kjit::program_from_file("k.cu");
  {
    kjit::Cache cache(config);
    BOOST_TEST(cache.get(program, k_sm80)->ptx == plain(config, "k.cu", {}).ptx);
    BOOST_TEST(cache.stats().uncached_probe == 1u);
  }
  put(d + "/opt.h", "#define OPT 2\n");
  settle();
  kjit::Cache fresh(config);
  BOOST_TEST(fresh.get(program, k_sm80)->ptx == plain(config, "k.cu", {}).ptx);  // OPT 2, not a stale 1
}

// Found by review: a header whose own text names nothing expands another header's __FILE__
// macro, and the binary holds only a character of the name (`HERE[1]`): linked instead of
// copied with its #line, it gave the private folder's character ('d' of /dev/shm/…) where NVRTC
// gives '.' of "c.h". When the binary may name files, every header is a named copy.
BOOST_AUTO_TEST_CASE(a_character_of_a_name_from_another_headers_macro_is_the_users)
{
  const std::string d = tmp.path() + "/character";
  put(d + "/a.h", "#define HERE __FILE__\n");
  put(d + "/c.h", "extern \"C\" __global__ void k(int* o) { *o = HERE[1]; }\n");
  put(d + "/k.cu", "#include \"a.h\"\n#include \"c.h\"\n");
  settle();
  InDir here(d);
  kjit::Cache cache(config);
  same_binary_(cache, config, "k.cu", {});
}

// Found by review: pastes whose first piece is short, with a longer last piece: `P(__, FILE__)`,
// `P(_, _TIME__)`, `P(__, has_include)`. A piece is also a token that ends a word.
BOOST_AUTO_TEST_CASE(a_word_pasted_onto_its_ending_counts)
{
  const std::string d = tmp.path() + "/ending";
  put(d + "/h.h", "#define P(a, b) a##b\n#define HI P(__, has_include)\n"
                  "#if HI(\"flag.h\")\n#define VALUE 2\n#else\n#define VALUE 1\n#endif\n"
                  "#define WHERE (P(__, FILE__)[1])\n");
  put(d + "/k.cu", "#include \"h.h\"\nextern \"C\" __global__ void k(int* o) { o[0] = VALUE; o[1] = WHERE; }\n");
  settle();
  InDir here(d);
  kjit::Program program = kjit::program_from_file("k.cu");
  {
    kjit::Cache cache(config);
    same_binary_(cache, config, "k.cu", {});
  }
  put(d + "/flag.h", "");
  settle();
  kjit::Cache fresh(config);
  BOOST_TEST(fresh.get(program, k_sm80)->ptx == plain(config, "k.cu", {}).ptx);  // VALUE 2, not a stale 1
}

// Issue 38: `#pragma once` reached through a macro (`#define PO _Pragma("once")` in another header,
// or `-DPO=_Pragma("once")`): a hard-linked header saying PO is one file to NVRTC (by inode), so it
// must be one file in the private folder too. Before, a binary naming files got a copy per name:
// where() was defined twice (a compile error where NVRTC compiles), or, with a guard, named twice.
BOOST_AUTO_TEST_CASE(once_through_a_macro_keeps_a_hard_linked_header_one_file)
{
  const std::string d = tmp.path() + "/once_macro";
  put(d + "/po.h", "#define PO _Pragma(\"once\")\n");
  put(d + "/o.h", std::string("PO\n") + k_where);
  BOOST_TEST_REQUIRE(::link((d + "/o.h").c_str(), (d + "/p.h").c_str()) == 0);
  put(d + "/k.cu", "#include \"po.h\"\n#include \"o.h\"\n#include \"p.h\"\n"
                   "extern \"C\" __global__ void k(const char** s) { *s = where(); }\n");
  put(d + "/d.cu", "#include \"o.h\"\n#include \"p.h\"\n"
                   "extern \"C\" __global__ void k(const char** s) { *s = where(); }\n");
  settle();
  InDir here(d);
  // Found by review: _Pragma and `once` in two texts (a helper macro of the project's, or CCCL's
  // _CCCL_PRAGMA from a toolkit header); before, `once` was looked for beside `_Pragma` only.
  put(d + "/prag.h", "#define STR(x) #x\n#define PRAG(x) _Pragma(STR(x))\n");
  put(d + "/po2.h", "#include \"prag.h\"\n#define PO PRAG(once)\n");
  put(d + "/k2.cu", "#include \"po2.h\"\n#include \"o.h\"\n#include \"p.h\"\n"
                    "extern \"C\" __global__ void k(const char** s) { *s = where(); }\n");
  put(d + "/po3.h", "#include <cuda/std/cstdint>\n#define PO _CCCL_PRAGMA(once)\n");
  put(d + "/k3.cu", "#include \"po3.h\"\n#include \"o.h\"\n#include \"p.h\"\n"
                    "extern \"C\" __global__ void k(const char** s) { *s = where(); }\n");
  settle();
  for (const auto& options : {std::vector<std::string>{"-lineinfo"}, std::vector<std::string>{}}) {
    kjit::Cache cache(config);
    same_binary_(cache, config, "k.cu", options);
    std::vector<std::string> with_define = options;
    with_define.push_back("-DPO=_Pragma(\"once\")");
    same_binary_(cache, config, "d.cu", with_define);
    same_binary_(cache, config, "k2.cu", options);
    same_binary_(cache, config, "k3.cu", options);
  }
  BOOST_TEST(kjit::deps::text_may_define_once("#define PO PRAG(once)\n"));
  BOOST_TEST(kjit::deps::text_may_define_once("#define PO _Pragma(\"once\")\n"));
  BOOST_TEST(kjit::deps::text_may_define_once("#define PO _Pragma(\"on\\\nce\")\n"));
  BOOST_TEST(!kjit::deps::text_may_define_once("#pragma once\n#include \"a.h\"\n"));
  BOOST_TEST(!kjit::deps::text_may_define_once("  #  pragma   once\n"));
  BOOST_TEST(!kjit::deps::text_may_define_once("// each name is read once\n_Pragma(\"unroll\")\n"));
  BOOST_TEST(!kjit::deps::text_may_define_once("cuda::std::call_once(flag, f);\n"));
}

BOOST_AUTO_TEST_SUITE_END()
