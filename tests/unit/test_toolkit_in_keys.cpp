// The toolkit headers' fingerprint is in the keys of programs that may name a disk header only:
// a hit of a program without one checks no toolkit folder, and a program that includes a toolkit
// header still misses when that header changes.
#include <boost/test/unit_test.hpp>

#include "deps/toolkit_headers.hpp"
#include "fixture.hpp"

#include <cstdio>
#include <cstdlib>
#include <sys/stat.h>
#include <unistd.h>

using namespace kjit::test;

namespace {

const kjit::Arch k_arch = kjit::Arch::parse("sm_90");

// A toolkit of our own under `root`: this toolkit's libraries (a link, removed before the
// fixture's cleanup, which chmods what it removes through links too) and include/kjit_tk.h.
struct OwnToolkit {
  std::string root;
  explicit OwnToolkit(std::string folder) : root(std::move(folder))
  {
    put(root + "/include/kjit_tk.h", "#define TK 1\n");
    const std::string toolkit = kjit::current_config().cuda_home.empty() ? "/usr/local/cuda" : kjit::current_config().cuda_home;
    BOOST_TEST_REQUIRE(::symlink((toolkit + "/lib64").c_str(), (root + "/lib64").c_str()) == 0);
  }
  ~OwnToolkit() { std::ignore = ::unlink((root + "/lib64").c_str()); }
  OwnToolkit(const OwnToolkit&) = delete;
  OwnToolkit& operator=(const OwnToolkit&) = delete;
};

} // namespace

BOOST_FIXTURE_TEST_SUITE(toolkit_in_keys, CacheFixture)

BOOST_AUTO_TEST_CASE(a_hit_of_a_program_without_includes_checks_no_toolkit_stamp)
{
  const kjit::Program program = small_program("plain");
  {
    kjit::Cache first(config);
    first.get(program, k_arch);  // compiled and stored
  }
  const std::uint64_t before = kjit::deps::toolkit_stamp_checks();
  kjit::Cache second(config);
  second.get(program, k_arch);
  BOOST_TEST(second.stats().disk_hits == 1u);
  BOOST_TEST(kjit::deps::toolkit_stamp_checks() == before);  // NVRTC reads no toolkit header for it
  BOOST_TEST(second.prepare(program, k_arch).options_txt().find("toolkit-headers:") == std::string::npos);
  BOOST_TEST(kjit::deps::toolkit_stamp_checks() == before);

  // A program that includes a toolkit header: its key holds the fingerprint, checked once.
  kjit::Program with = program;
  with.source = "#include <cuda_fp16.h>\n" + with.source;
  BOOST_TEST(second.prepare(with, k_arch).options_txt().find("toolkit-headers: ") != std::string::npos);
  BOOST_TEST(kjit::deps::toolkit_stamp_checks() == before + 1);
  BOOST_TEST(second.prepare(with, k_arch).options_txt().find("toolkit-headers: ") != std::string::npos);
  BOOST_TEST(kjit::deps::toolkit_stamp_checks() == before + 1);  // once per cache
}

BOOST_AUTO_TEST_CASE(a_toolkit_header_change_misses_only_the_programs_that_may_include_it)
{
  // A toolkit of our own: this toolkit's libraries, a header tree of our own. In other processes:
  // NVRTC is loaded once per process, from one toolkit.
  const OwnToolkit own(tmp.path() + "/tk");
  const std::string& root = own.root;
  const std::string includes = tmp.path() + "/includes.cu";
  write_text(includes, "#include <kjit_tk.h>\nextern \"C\" __global__ void k(int* p) { p[0] = TK; }\n");
  const std::string free = tmp.path() + "/free.cu";
  write_text(free, small_program("free").source);
  settle();
  const std::string env = "KJIT_CUDA_HOME='" + root + "'";
  const auto probe = [&](const std::string& file) { return probe_cache(config.cache_dir, file, "sm_90", env); };

  const std::string compiled = probe(includes);
  BOOST_TEST(output_has_line(compiled, "compiles: 1"), compiled);
  BOOST_TEST(output_has_line(probe(free), "compiles: 1"));
  const std::string hit = probe(includes);
  BOOST_TEST(output_has_line(hit, "disk_hits: 1"), hit);

  // Replaced as a package manager does (a new file renamed over the old one).
  put(root + "/include/kjit_tk.h.new", "#define TK 2\n");
  BOOST_TEST_REQUIRE(std::rename((root + "/include/kjit_tk.h.new").c_str(), (root + "/include/kjit_tk.h").c_str()) == 0);
  settle();
  const std::string changed = probe(includes);
  BOOST_TEST(output_has_line(changed, "compiles: 1"), changed);
  BOOST_TEST(output_has_line(changed, "disk_hits: 0"), changed);
  const std::string still = probe(free);  // reads no toolkit header: its key is the same
  BOOST_TEST(output_has_line(still, "disk_hits: 1"), still);
  BOOST_TEST(output_has_line(still, "compiles: 0"), still);
}

BOOST_AUTO_TEST_CASE(a_spliced_include_of_a_toolkit_header_keeps_the_fingerprint)
{
  // "#inc\<newline>lude <kjit_tk.h>" is an include to NVRTC (a line splice): its key must hold the
  // toolkit headers' fingerprint. Before, the program counted as naming no header: the header's
  // change was served the old binary (TK 1 where an uncached compile gives 2).
  const OwnToolkit own(tmp.path() + "/tk");
  const std::string& root = own.root;
  const std::string spliced = tmp.path() + "/spliced.cu";
  write_text(spliced, "#inc\\\nlude <kjit_tk.h>\nextern \"C\" __global__ void k(int* p) { p[0] = TK; }\n");
  settle();
  const std::string env = "KJIT_CUDA_HOME='" + root + "'";
  BOOST_TEST(output_has_line(probe_cache(config.cache_dir, spliced, "sm_90", env), "compiles: 1"));
  BOOST_TEST(output_has_line(probe_cache(config.cache_dir, spliced, "sm_90", env), "disk_hits: 1"));
  put(root + "/include/kjit_tk.h.new", "#define TK 2\n");
  BOOST_TEST_REQUIRE(std::rename((root + "/include/kjit_tk.h.new").c_str(), (root + "/include/kjit_tk.h").c_str()) == 0);
  settle();
  const std::string changed = probe_cache(config.cache_dir, spliced, "sm_90", env);
  BOOST_TEST(output_has_line(changed, "compiles: 1"), changed);
  BOOST_TEST(output_has_line(changed, "disk_hits: 0"), changed);
}

BOOST_AUTO_TEST_CASE(a_spliced_include_of_a_user_header_hits_in_the_next_process)
{
  // "#inc\<newline>lude "val.h"": the entry is stored with val.h in its key; the lookup must read
  // its manifest too. Before, prepare() looked for the plain word "include" only: every process
  // compiled the program again (slow, never stale).
  const std::string file = tmp.path() + "/user_spliced.cu";
  write_text(file, "#inc\\\nlude \"val.h\"\nextern \"C\" __global__ void k(int* p) { p[0] = V; }\n");
  put(tmp.path() + "/val.h", "#define V 5\n");
  settle();
  BOOST_TEST(output_has_line(probe_cache(config.cache_dir, file, "sm_90", ""), "compiles: 1"));
  const std::string again = probe_cache(config.cache_dir, file, "sm_90", "");
  BOOST_TEST(output_has_line(again, "disk_hits: 1"), again);
  BOOST_TEST(output_has_line(again, "compiles: 0"), again);
}

BOOST_AUTO_TEST_CASE(a_define_that_probes_a_header_is_not_a_program_without_includes)
{
  // -DHAS=__has_include("val.h") in an #if: NVRTC looks for val.h beside the program. Before, the
  // program counted as naming no header (the option is no -I/-include): removing val.h was served
  // the binary compiled while it existed.
  const std::string file = tmp.path() + "/probe.cu";
  write_text(file, "#if HAS\nextern \"C\" __global__ void k(int* p) { p[0] = 11; }\n"
                   "#else\nextern \"C\" __global__ void k(int* p) { p[0] = 22; }\n#endif\n");
  put(tmp.path() + "/val.h", "#define V 1\n");
  settle();
  kjit::Program program = kjit::program_from_file(file);
  program.options.push_back("-DHAS=__has_include(\"val.h\")");
  const auto compiled = [&](kjit::Cache& cache) { return cache.get(program, k_arch)->ptx; };
  {
    kjit::Cache first(config);
    BOOST_TEST(compiled(first).find("11;") != std::string::npos);
  }
  BOOST_TEST_REQUIRE(::unlink((tmp.path() + "/val.h").c_str()) == 0);
  settle();
  kjit::Cache second(config);
  const std::string now = compiled(second);
  BOOST_TEST(now.find("22;") != std::string::npos, now);
  BOOST_TEST(second.prepare(program, k_arch).options_txt().find("toolkit-headers: ") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_ptxas_options_file_is_never_served_from_the_cache)
{
  // ptxas reads -Xptxas=--options-file=F itself: no key holds F. Before, editing F (here its
  // register limit) was served the cubin made with the old F.
  const std::string options = tmp.path() + "/ptxas.txt";
  put(options, "--maxrregcount=24\n");
  kjit::Program program = small_program("optf");
  program.source = "extern \"C\" __global__ void k(float* p) { float a[64];\n"
                   "  for (int i = 0; i < 64; ++i) a[i] = p[i] * p[i + 1];\n"
                   "  float s = 0; for (int i = 0; i < 64; ++i) s += a[(i * 7) % 64] * p[i];\n  p[0] = s; }\n";
  program.options.push_back("-Xptxas=--options-file=" + options);
  std::string before;
  {
    kjit::Cache first(config);
    before = first.get(program, k_arch)->cubin;
  }
  put(options, "--maxrregcount=128\n");
  settle();
  kjit::Cache second(config);
  const std::string now = second.get(program, k_arch)->cubin;
  BOOST_TEST(second.stats().compiles == 1u);
  BOOST_TEST((now != before));  // 72 registers instead of 24
}

BOOST_AUTO_TEST_CASE(the_nvvm_version_nvrtc_reads_from_the_environment_is_in_the_key)
{
  // NVRTC reads NV_NVVM_VERSION when it loads: nvvm-latest makes other PTX and cubins than the
  // default (nvvm70 on sm_80; measured, NVRTC 13.0). Before, the key left it out, and a process
  // without it was served the binary another process made with it (and the converse).
  BOOST_TEST_REQUIRE(std::getenv("NV_NVVM_VERSION") == nullptr);
  const kjit::Arch arch = kjit::Arch::parse("sm_80");
  const std::string file = tmp.path() + "/divide.cu";
  put(file, "extern \"C\" __global__ void divide(float* o, float a, float b) { *o = a / b; }\n");
  const std::string latest = probe_cache(config.cache_dir, file, "sm_80", "NV_NVVM_VERSION=nvvm-latest");
  BOOST_TEST_REQUIRE(output_has_line(latest, "compiles: 1"), latest);

  // This process loaded NVRTC without it: its lookup (the direct path) must be this NVRTC's binary.
  const kjit::Program program = kjit::program_from_file(file);
  std::string key;
  {
    kjit::Cache cache(config);
    const kjit::Lookup found = cache.lookup(program, arch);
    BOOST_TEST(std::string(kjit::to_string(found.source)) == "compiled");  // was disk: the nvvm-latest binary
    BOOST_TEST((found.binary->ptx == kjit::compile(program, arch).ptx));
    key = cache.prepare(program, arch).key();
    BOOST_TEST(cache.prepare(program, arch).options_txt().find("nvrtc-environment") == std::string::npos);
  }  // its commit is durable: the probes find it

  // Each setting finds its own entry (the SHA-256 path of another process).
  const std::string plain = probe_cache(config.cache_dir, file, "sm_80");
  BOOST_TEST(output_has_line(plain, "disk_hits: 1"), plain);
  BOOST_TEST(output_has_line(plain, "key: " + key), plain);
  const std::string again = probe_cache(config.cache_dir, file, "sm_80", "NV_NVVM_VERSION=nvvm-latest");
  BOOST_TEST(output_has_line(again, "disk_hits: 1"), again);
  BOOST_TEST(!output_has_line(again, "key: " + key), again);
}

// NVRTC takes NV_NVVM_VERSION when it loads; the key takes it when the Cache's key context is made.
// A host that sets it between the two (after a hit, before its first miss) compiles with nvvm-latest
// under a key without it. Before, that binary was stored, and a process without the variable was
// served it (disk hit); now such a compile is not cached.
BOOST_AUTO_TEST_CASE(a_compile_with_another_nvvm_version_than_its_key_is_not_cached)
{
  BOOST_TEST_REQUIRE(std::getenv("NV_NVVM_VERSION") == nullptr);
  const std::string first = tmp.path() + "/first.cu";
  put(first, "extern \"C\" __global__ void first(float* o) { *o = 1.0f; }\n");
  const std::string remembered = probe_cache(config.cache_dir, first, "sm_80");  // the store knows the toolchain
  BOOST_TEST_REQUIRE(output_has_line(remembered, "compiles: 1"), remembered);
  const std::string file = tmp.path() + "/divide.cu";
  put(file, "extern \"C\" __global__ void divide(float* o, float a, float b) { *o = a / b; }\n");
  const std::string late = probe_cache(config.cache_dir, file, "sm_80 --setenv NV_NVVM_VERSION=nvvm-latest");
  BOOST_TEST_REQUIRE(output_has_line(late, "compiles: 1"), late);
  const std::string plain = probe_cache(config.cache_dir, file, "sm_80");
  BOOST_TEST(output_has_line(plain, "compiles: 1"), plain);  // was disk_hits: 1, the nvvm-latest binary
  BOOST_TEST(output_has_line(plain, "disk_hits: 0"), plain);
}

BOOST_AUTO_TEST_SUITE_END()
