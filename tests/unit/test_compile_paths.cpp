// Compile paths: kjit's cubin equals NVRTC's direct whole-program cubin; ptxas options reach the
// step that makes the cubin; nvJitLink errors keep their message; LTO IR is returned byte for byte.
#include <boost/test/unit_test.hpp>

#include <kjit/compile.hpp>
#include <kjit/cubin.hpp>
#include <kjit/error.hpp>

#include "../common/parity_kernels.hpp"
#include "fixture.hpp"
#include "rtc/compiler.hpp"
#include "rtc/nvrtc_library.hpp"

#include <algorithm>
#include <set>

namespace {

kjit::Program parity_program()
{
  return kjit::test::parity_program();
}

// NVRTC called directly for the real arch, as a user replacing their own NVRTC calls would.
std::string direct_nvrtc_cubin(const kjit::Program& program, const kjit::Arch& arch)
{
  const auto& api = kjit::rtc::nvrtc();
  nvrtcProgram handle = nullptr;
  BOOST_TEST_REQUIRE(api.create_program(&handle, program.source.c_str(), program.name.c_str(), 0, nullptr, nullptr) ==
                     NVRTC_SUCCESS);
  for (const auto& expression : program.name_expressions) {
    api.add_name_expression(handle, expression.c_str());
  }
  std::vector<std::string> options = program.options;
  for (auto& option : kjit::rtc::implicit_options(kjit::current_config(), arch)) {
    options.push_back(option);  // -arch=sm_XY and the toolkit's include folders
  }
  std::vector<const char*> argv;
  for (const auto& option : options) {
    argv.push_back(option.c_str());
  }
  BOOST_TEST_REQUIRE(api.compile_program(handle, static_cast<int>(argv.size()), argv.data()) == NVRTC_SUCCESS);
  std::size_t size = 0;
  api.get_cubin_size(handle, &size);
  std::string cubin(size, '\0');
  api.get_cubin(handle, cubin.data());
  api.destroy_program(&handle);
  return cubin;
}

const char* const k_heavy = R"(
extern "C" __global__ void heavy(const float* a, float* out, int n)
{
  float acc[32];
  for (int j = 0; j < 32; ++j) acc[j] = a[threadIdx.x + j * n];
  for (int it = 0; it < 8; ++it)
    for (int j = 0; j < 32; ++j) acc[j] = acc[j] * acc[(j + 7) % 32] + acc[(j + 3) % 32];
  float s = 0;
  for (int j = 0; j < 32; ++j) s += acc[j] * (j + 1);
  out[threadIdx.x] = s;
}
)";

int registers_of(const kjit::Binary& binary, const std::string& kernel)
{
  const auto info = binary.kernel(kernel);
  BOOST_TEST_REQUIRE(info.has_value());
  return info->registers;
}

const char* const k_too_much_shared = R"(
extern "C" __global__ void greedy(float* out)
{
  __shared__ float big[100000];
  big[threadIdx.x] = threadIdx.x;
  __syncthreads();
  out[threadIdx.x] = big[99999 - threadIdx.x];
}
)";

} // namespace

BOOST_AUTO_TEST_SUITE(compile_paths)

BOOST_AUTO_TEST_CASE(cubin_equals_nvrtc_direct_whole_program_cubin)
{
  for (const char* name : {"sm_80", "sm_90", "sm_120"}) {
    const kjit::Arch arch = kjit::Arch::parse(name);
    const kjit::Binary binary = kjit::compile(parity_program(), arch);
    const std::string reference = direct_nvrtc_cubin(parity_program(), arch);
    BOOST_TEST_CONTEXT(name)
    {
      BOOST_TEST(binary.cubin_path == "nvrtc");
      const auto ours = binary.kernels();
      const auto theirs = kjit::read_kernels(reference);
      BOOST_TEST_REQUIRE(ours.size() == theirs.size());
      BOOST_TEST(ours.size() == 6u);
      for (std::size_t i = 0; i < ours.size(); ++i) {
        BOOST_TEST(ours[i].name == theirs[i].name);
        BOOST_TEST(ours[i].registers == theirs[i].registers, ours[i].name);
        BOOST_TEST(ours[i].static_shared_bytes == theirs[i].static_shared_bytes, ours[i].name);
        BOOST_TEST(ours[i].local_bytes == theirs[i].local_bytes, ours[i].name);
      }
      const auto functions = kjit::cubin_functions(binary.cubin);
      const auto reference_functions = kjit::cubin_functions(reference);
      BOOST_TEST((std::set<std::string>(functions.begin(), functions.end()) ==
                  std::set<std::string>(reference_functions.begin(), reference_functions.end())));
      for (const auto& function : functions) {
        // Whole-program code keeps no helper as a separate global function; a helper that stays a
        // call is local to its kernel ($kernel$helper), as in NVRTC's own cubin.
        const bool kernel = std::any_of(ours.begin(), ours.end(), [&](const auto& k) { return k.name == function; });
        BOOST_TEST((kernel || function.rfind('$', 0) == 0), function);
      }
      BOOST_TEST(binary.ptx.find(".target " + std::string(name)) != std::string::npos);
    }
  }
}

BOOST_AUTO_TEST_CASE(maxrregcount_reaches_the_step_that_makes_the_cubin)
{
  const kjit::Arch arch = kjit::Arch::parse("sm_80");
  const kjit::Binary plain = kjit::compile({"heavy.cu", k_heavy, {}, {}, {}}, arch);
  BOOST_TEST_REQUIRE(registers_of(plain, "heavy") > 32);
  for (const char* option : {"-maxrregcount=32", "--maxrregcount=32"}) {
    const kjit::Binary limited = kjit::compile({"heavy.cu", k_heavy, {}, {option}, {}}, arch);
    BOOST_TEST(registers_of(limited, "heavy") <= 32, option);
  }
  // Through nvJitLink too: LTO, and PTX made into a cubin for a real arch.
  const kjit::Binary lto = kjit::compile({"heavy.cu", k_heavy, {}, {"-dlto", "-maxrregcount=32"}, {}}, arch);
  BOOST_TEST(lto.cubin_path == "nvjitlink-lto");
  BOOST_TEST(registers_of(lto, "heavy") <= 32);
  const kjit::Binary ptx = kjit::compile({"heavy.cu", k_heavy, {}, {}, {}}, kjit::Arch::parse("compute_80"));
  std::string log;
  const kjit::Program limited{"heavy.cu", k_heavy, {}, {"-Xptxas", "--maxrregcount=32"}, {}};
  const std::string cubin = kjit::rtc::cubin_from_ptx(limited, ptx.ptx, arch, log);
  BOOST_TEST(kjit::read_kernels(cubin).at(0).registers <= 32);
}

BOOST_AUTO_TEST_CASE(ptxas_options_for_a_virtual_arch_are_an_option_error)
{
  for (const char* option : {"-Xptxas=-O1", "--ptxas-options=-v"}) {
    BOOST_CHECK_THROW(kjit::compile({"heavy.cu", k_heavy, {}, {option}, {}}, kjit::Arch::parse("compute_80")),
                      kjit::OptionError);
  }
  // What the driver's JIT takes when the PTX is loaded (load_options_of) is accepted, and NVRTC
  // honours it in the PTX too: the PTX is the one the real arch's compile makes with it.
  for (const char* option : {"-maxrregcount=32", "--maxrregcount=32", "-lineinfo"}) {
    const kjit::Program program{"heavy.cu", k_heavy, {}, {option}, {}};
    const kjit::Binary virtual_arch = kjit::compile(program, kjit::Arch::parse("compute_80"));
    BOOST_TEST(virtual_arch.cubin.empty());
    BOOST_TEST(virtual_arch.ptx == kjit::compile(program, kjit::Arch::parse("sm_80")).ptx, option);
  }
}

// -optix-ir makes NVRTC produce OptiX IR instead of PTX and cubin, which kjit neither keeps nor
// loads: a compile for a virtual arch returned (and the cache stored) a binary with no PTX and no
// cubin, and one for a real arch failed as a ToolchainError ("NVRTC produced a bad cubin").
BOOST_AUTO_TEST_CASE(optix_ir_is_an_option_error)
{
  for (const char* option : {"-optix-ir", "--optix-ir"}) {
    for (const char* arch : {"sm_80", "compute_80"}) {
      BOOST_CHECK_THROW(kjit::compile({"heavy.cu", k_heavy, {}, {option}, {}}, kjit::Arch::parse(arch)), kjit::OptionError);
    }
  }
}

BOOST_AUTO_TEST_CASE(too_much_shared_memory_is_a_compile_error_with_the_message)
{
  const kjit::Arch arch = kjit::Arch::parse("sm_80");
  for (const std::vector<std::string>& options : {std::vector<std::string>{}, std::vector<std::string>{"-dlto"}}) {
    try {
      kjit::compile({"greedy.cu", k_too_much_shared, {}, options, {}}, arch);
      BOOST_FAIL("expected CompileError");
    } catch (const kjit::CompileError& e) {
      BOOST_TEST(e.log().find("too much shared data") != std::string::npos, e.log());
    }
  }
  const kjit::Binary ptx = kjit::compile({"greedy.cu", k_too_much_shared, {}, {}, {}}, kjit::Arch::parse("compute_80"));
  std::string log;
  try {
    kjit::rtc::cubin_from_ptx({"greedy.cu", k_too_much_shared, {}, {}, {}}, ptx.ptx, arch, log);
    BOOST_FAIL("expected CompileError");
  } catch (const kjit::CompileError& e) {
    BOOST_TEST(e.log().find("too much shared data") != std::string::npos, e.log());
    BOOST_TEST(e.arch() == "sm_80");
  }
}

BOOST_AUTO_TEST_CASE(ltoir_is_returned_byte_for_byte)
{
  // LTO IR is binary and ends with a hash: find a program whose IR ends with a NUL byte, which a
  // PTX-style strip would cut off.
  const kjit::Arch arch = kjit::Arch::parse("sm_80");
  std::vector<std::string> options = kjit::rtc::implicit_options(kjit::current_config(), arch);
  options.push_back("-dlto");
  std::vector<const char*> argv;
  for (const auto& option : options) {
    argv.push_back(option.c_str());
  }
  const auto& api = kjit::rtc::nvrtc();
  for (int value = 0; value < 4000; ++value) {
    const kjit::Program program{"nul.cu", "extern \"C\" __global__ void k(int* p) { p[0] = " + std::to_string(value) + "; }\n",
                                {}, {}, {}};
    nvrtcProgram handle = nullptr;
    api.create_program(&handle, program.source.c_str(), program.name.c_str(), 0, nullptr, nullptr);
    BOOST_TEST_REQUIRE(api.compile_program(handle, static_cast<int>(argv.size()), argv.data()) == NVRTC_SUCCESS);
    std::size_t size = 0;
    api.get_ltoir_size(handle, &size);
    std::string reference(size, '\0');
    api.get_ltoir(handle, reference.data());
    api.destroy_program(&handle);
    if (reference.empty() || reference.back() != '\0') {
      continue;
    }
    const std::string ltoir = kjit::rtc::compile_ltoir(kjit::current_config(), program, arch);
    BOOST_TEST(ltoir.size() == reference.size());
    BOOST_TEST((ltoir == reference));
    return;
  }
  BOOST_FAIL("no LTO IR ending with a NUL byte found");
}

BOOST_FIXTURE_TEST_CASE(the_cubin_path_is_recorded_in_options_txt_and_the_record, kjit::test::CacheFixture)
{
  for (const auto& [options, path] : {std::pair<std::vector<std::string>, std::string>{{}, "nvrtc"},
                                      std::pair<std::vector<std::string>, std::string>{{"-dlto"}, "nvjitlink-lto"}}) {
    kjit::Program program = kjit::test::small_program("path");
    program.options = options;
    {
      kjit::Cache cache(config);
      const kjit::PreparedProgram prepared = cache.prepare(program, kjit::Arch::parse("sm_90"));
      BOOST_TEST(prepared.options_txt().find("cubin-path: " + path + "\n") != std::string::npos);
      BOOST_TEST(cache.get(prepared)->cubin_path == path);
    }
    kjit::Cache fresh(config);  // read back from the store
    const auto binary = fresh.get(program, kjit::Arch::parse("sm_90"));
    BOOST_TEST(fresh.stats().disk_hits == 1u);
    BOOST_TEST(binary->cubin_path == path);
    BOOST_TEST(binary->kernels().size() == 1u);
  }
}

// Issue 10: compute_XY is served from the stored sm_XY entry of the same program and headers
// (NVRTC's PTX is the same for both), with no compile; the PTX equals a direct compute_XY compile.
BOOST_FIXTURE_TEST_CASE(a_virtual_arch_is_served_from_its_real_archs_ptx_without_a_compile, kjit::test::CacheFixture)
{
  kjit::test::write_text(tmp.path() + "/scale.h", "#define SCALE 3.0f\n");
  kjit::test::settle();
  kjit::Program program = parity_program();
  // Through -I: an absolute include name is compiled from the disk, never cached (docs/includes.md).
  program.source = "#include \"scale.h\"\n" + program.source +
                   "extern \"C\" __global__ void scaled(float* p) { p[threadIdx.x] *= SCALE; }\n";
  program.options.push_back("-I" + tmp.path());
  for (const char* real_name : {"sm_80", "sm_90a"}) {
    const kjit::Arch real = kjit::Arch::parse(real_name);
    const kjit::Arch virtual_arch = kjit::Arch::parse(real.virtual_name());
    {
      kjit::Cache cache(config);
      const auto compiled = cache.get(program, real);
      BOOST_TEST(cache.stats().compiles == 1u);
      const auto served = cache.get(program, virtual_arch);
      BOOST_TEST(cache.stats().compiles == 1u);  // no NVRTC compile for the virtual arch
      BOOST_TEST((served->ptx == compiled->ptx));
      BOOST_TEST(served->cubin.empty());
      BOOST_TEST(served->cubin_path == "none");
      BOOST_TEST(served->arch == virtual_arch.str());
      BOOST_TEST(served->lowered_names == compiled->lowered_names);
      // The same bytes an uncached compile for the virtual arch gives.
      BOOST_TEST((served->ptx == kjit::compile(program, virtual_arch).ptx));
    }
    kjit::Cache fresh(config);  // stored under the virtual arch's own key
    BOOST_TEST(fresh.get(program, virtual_arch)->ptx.size() > 0u);
    BOOST_TEST(fresh.stats().disk_hits == 1u);
    BOOST_TEST(fresh.stats().compiles == 0u);
  }
}

// What a virtual-arch compile refuses is refused when its PTX would be reused, too.
BOOST_FIXTURE_TEST_CASE(ptx_reuse_keeps_the_virtual_archs_option_errors, kjit::test::CacheFixture)
{
  kjit::Program program = kjit::test::small_program("reuse_options");
  program.options = {"-Xptxas=-O1"};
  kjit::Cache cache(config);
  cache.get(program, kjit::Arch::parse("sm_90"));
  BOOST_CHECK_THROW(cache.get(program, kjit::Arch::parse("compute_90")), kjit::OptionError);
  // -maxrregcount is carried to the PTX load: compute_90 is served from sm_90's PTX.
  program.options = {"-maxrregcount=32"};
  const auto real = cache.get(program, kjit::Arch::parse("sm_90"));
  const std::uint64_t compiles = cache.stats().compiles;
  const auto virtual_arch = cache.get(program, kjit::Arch::parse("compute_90"));
  BOOST_TEST(cache.stats().compiles == compiles);
  BOOST_TEST(virtual_arch->ptx == real->ptx);
}

// Another real arch is never made from stored IR of a different virtual arch: the IR is the
// program compiled with that arch's __CUDA_ARCH__, so the code could differ from a direct compile.
BOOST_FIXTURE_TEST_CASE(another_real_arch_is_compiled_for_its_own_cuda_arch, kjit::test::CacheFixture)
{
  kjit::Program program = parity_program();
  program.source += R"(
extern "C" __global__ void by_arch(int* p)
{
#if __CUDA_ARCH__ >= 900
  p[threadIdx.x] = __popc(p[threadIdx.x]) * 90;
#else
  p[threadIdx.x] = 80;
#endif
}
)";
  kjit::Cache cache(config);
  cache.get(program, kjit::Arch::parse("sm_80"));
  const auto sm90 = cache.get(program, kjit::Arch::parse("sm_90"));
  BOOST_TEST(cache.stats().compiles == 2u);
  const std::string direct_cubin = direct_nvrtc_cubin(program, kjit::Arch::parse("sm_90"));  // once: a CUB compile
  const auto direct = kjit::read_kernels(direct_cubin);
  const auto ours = sm90->kernels();
  BOOST_TEST_REQUIRE(ours.size() == direct.size());
  for (std::size_t i = 0; i < direct.size(); ++i) {
    BOOST_TEST(ours[i].name == direct[i].name);
    BOOST_TEST(ours[i].registers == direct[i].registers);
  }
  BOOST_TEST((kjit::cubin_functions(sm90->cubin) == kjit::cubin_functions(direct_cubin)));
}

BOOST_AUTO_TEST_SUITE_END()
