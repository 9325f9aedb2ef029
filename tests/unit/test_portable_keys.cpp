// Portable keys: moving the project or the toolkit keeps every hit, a header's content still
// misses, and a toolkit without NVRTC is served from the toolchain the store remembers.
#include <boost/test/unit_test.hpp>

#include "fixture.hpp"

#include "cache/toolchain.hpp"
#include "store/store.hpp"

#include <cstdio>
#include <cstdlib>
#include <unistd.h>
#include <sys/stat.h>

using namespace kjit::test;

namespace {

const char* const k_kernel = "extern \"C\" __global__ void portable(int* p) { *p = V + W + X; }\n";

// <dir>/src/k.cu with a header beside it, one under -I<dir>/include and one reached with "../".
kjit::Program project_at(const std::string& dir)
{
  return {dir + "/src/k.cu", read_text(dir + "/src/k.cu"), {}, {"-I" + dir + "/include"}, {}};
}

void write_project(const std::string& dir)
{
  for (const char* sub : {"", "/src", "/include", "/include/lib", "/common"}) {
    ::mkdir((dir + sub).c_str(), 0700);
  }
  write_text(dir + "/src/k.cu", std::string("#include \"near.h\"\n#include <lib/v.h>\n#include \"../common/x.h\"\n") + k_kernel);
  write_text(dir + "/src/near.h", "#define W 2\n");
  write_text(dir + "/include/lib/v.h", "#define V 1\n");
  write_text(dir + "/common/x.h", "#define X 3\n");
}

std::uint64_t compiles_of(const kjit::Config& config, const kjit::Program& program)
{
  kjit::Cache cache(config);
  cache.get(program, kjit::Arch::parse("sm_90"));
  return cache.stats().compiles;
}

} // namespace

BOOST_FIXTURE_TEST_SUITE(portable_keys, CacheFixture)

BOOST_AUTO_TEST_CASE(moving_the_project_folder_keeps_its_hits)
{
  const std::string before = tmp.path() + "/project";
  const std::string after = tmp.path() + "/moved/elsewhere";
  write_project(before);
  settle();
  BOOST_TEST(compiles_of(config, project_at(before)) == 1u);
  const kjit::PreparedProgram at_first = kjit::Cache(config).prepare(project_at(before), kjit::Arch::parse("sm_90"));
  BOOST_TEST(at_first.program_txt().find(before) == std::string::npos, at_first.program_txt());
  BOOST_TEST(at_first.options_txt().find(before) == std::string::npos, at_first.options_txt());

  ::mkdir((tmp.path() + "/moved").c_str(), 0700);
  BOOST_TEST_REQUIRE(std::rename(before.c_str(), after.c_str()) == 0);
  {
    kjit::Cache cache(config);
    cache.get(project_at(after), kjit::Arch::parse("sm_90"));
    BOOST_TEST(cache.stats().compiles == 0u);
    BOOST_TEST(cache.stats().disk_hits == 1u);
  }
  // The hit recorded a manifest for the new place: the next lookup takes the fast path.
  const kjit::PreparedProgram moved = kjit::Cache(config).prepare(project_at(after), kjit::Arch::parse("sm_90"));
  BOOST_TEST(!moved.provisional());
  BOOST_TEST(moved.key() == at_first.key());
  BOOST_TEST(compiles_of(config, project_at(after)) == 0u);

  // Content still decides: a changed header (same size) misses.
  write_text(after + "/common/x.h", "#define X 4\n");
  settle();
  BOOST_TEST(compiles_of(config, project_at(after)) == 1u);
}

BOOST_AUTO_TEST_CASE(the_same_headers_through_another_working_directory_hit)
{
  const std::string dir = tmp.path() + "/p";
  write_project(dir);
  settle();
  BOOST_TEST(compiles_of(config, project_at(dir)) == 1u);
  char cwd[4096];
  BOOST_TEST_REQUIRE(::getcwd(cwd, sizeof cwd) != nullptr);
  BOOST_TEST_REQUIRE(::chdir(dir.c_str()) == 0);
  // Relative names: "src/k.cu" with -Iinclude from the project folder.
  const kjit::Program relative{"src/k.cu", read_text(dir + "/src/k.cu"), {}, {"-Iinclude"}, {}};
  const std::uint64_t compiles = compiles_of(config, relative);
  BOOST_TEST_REQUIRE(::chdir(cwd) == 0);
  BOOST_TEST(compiles == 0u);
}

BOOST_AUTO_TEST_CASE(a_copy_of_the_toolkit_keeps_the_hits_and_no_nvrtc_keeps_them_too)
{
  const std::string file = tmp.path() + "/src/k.cu";
  ::mkdir((tmp.path() + "/src").c_str(), 0700);
  write_text(tmp.path() + "/src/h.h", "#define V 1\n#define W 2\n#define X 3\n");
  write_text(file, std::string("#include \"h.h\"\n#include <cuda/std/cstdint>\n") + k_kernel);
  settle();
  const std::string first = probe_cache(config.cache_dir, file, "sm_90");
  BOOST_TEST_REQUIRE(output_has_line(first, "compiles: 1"), first);

  // The toolkit copied as links (cp -rs): another path, other folders, the same content.
  const char* home = std::getenv("CUDA_HOME");
  const std::string toolkit = home != nullptr && *home == '/' ? home : "/usr/local/cuda";
  const std::string copy = tmp.path() + "/toolkit-copy";
  std::string output;
  BOOST_TEST_REQUIRE(run("mkdir -p '" + copy + "' && cp -rs '" + toolkit + "/include' '" + copy + "/include' && cp -rsL '" +
                           toolkit + "/lib64/.' '" + copy + "/lib64' 2>&1",
                         output) == 0,
                     output);
  const std::string copied = probe_cache(config.cache_dir, file, "sm_90", "KJIT_CUDA_HOME='" + copy + "'");
  BOOST_TEST(output_has_line(copied, "result: ok"), copied);
  BOOST_TEST(output_has_line(copied, "compiles: 0"), copied);
  BOOST_TEST(output_has_line(copied, "disk_hits: 1"), copied);

  // No NVRTC at all: the remembered toolchain serves the hit and nothing is loaded.
  const std::string none = tmp.path() + "/no-toolkit";
  ::mkdir(none.c_str(), 0700);
  const std::string bare = probe_cache(config.cache_dir, file, "sm_90", "KJIT_CUDA_HOME='" + none + "'");
  BOOST_TEST(output_has_line(bare, "result: ok"), bare);
  BOOST_TEST(output_has_line(bare, "disk_hits: 1"), bare);
  BOOST_TEST(output_has_line(bare, "compiles: 0"), bare);
  BOOST_TEST(output_has_line(bare, "nvrtc_loaded: 0"), bare);
  BOOST_TEST(output_has_line(bare, "nvjitlink_loaded: 0"), bare);
  const auto archs_line = [](const std::string& output) {
    const auto at = output.find("supported_archs: ");
    return at == std::string::npos ? std::string("none") : output.substr(at, output.find('\n', at) - at);
  };
  BOOST_TEST(archs_line(bare) == archs_line(first), bare);  // remembered, not asked of NVRTC

  // A miss there is a ToolchainError naming the library it could not load.
  write_text(tmp.path() + "/src/h.h", "#define V 7\n#define W 2\n#define X 3\n");
  settle();
  const std::string miss = probe_cache(config.cache_dir, file, "sm_90", "KJIT_CUDA_HOME='" + none + "'");
  BOOST_TEST(miss.find("result: error cannot load NVRTC from " + none) != std::string::npos, miss);
}

BOOST_AUTO_TEST_CASE(the_newest_remembered_toolchain_is_the_one_used_without_nvrtc)
{
  const auto store = kjit::store::Store::open(tmp.path() + "/store", 1 << 20);
  BOOST_TEST(!kjit::cache::remembered_toolchain(*store).has_value());
  const std::string older = "100\n12.8 V12.8.1 CL-1\n12.8\n75 80\nfp-old\ninclude\n";
  const std::string newer = "50\n13.0 V13.0.88 CL-2\n13.0\n75 80 90\nfp-new\ninclude\ninclude/cccl\n";
  store->put({{kjit::store::Table::meta, std::string(kjit::cache::k_context_prefix) + "a", newer},
              {kjit::store::Table::meta, std::string(kjit::cache::k_context_prefix) + "b", older},
              {kjit::store::Table::meta, std::string(kjit::cache::k_context_prefix) + "c", "garbage"}});
  const auto chosen = kjit::cache::remembered_toolchain(*store);
  BOOST_TEST_REQUIRE(chosen.has_value());
  BOOST_TEST(chosen->nvrtc_identity == "13.0 V13.0.88 CL-2");  // newer version, though remembered earlier
  BOOST_TEST(chosen->toolkit_headers.value() == "fp-new");
  BOOST_TEST(chosen->toolkit_include_names == (std::vector<std::string>{"include", "include/cccl"}));
  BOOST_TEST(chosen->supported_archs == (std::vector<int>{75, 80, 90}));
}

BOOST_AUTO_TEST_SUITE_END()
