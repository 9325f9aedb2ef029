// Loading what an application has: any Binary (kjit::compile()'s, a lookup's), raw cubin, fatbin
// and PTX bytes, files; checked before the driver; JIT options for PTX; the JIT's log in errors.
#include <boost/test/unit_test.hpp>

#include "../common/sample_kernels.hpp"
#include "../unit/fixture.hpp"
#include "fake_driver.hpp"

#include <sys/stat.h>

#include <cstdlib>
#include <cstring>

using kjit::test::fake;

namespace {

struct Load : kjit::test::DriverFixture {
  // What the ImageError says, after checking that nothing reached the driver.
  template <typename F>
  std::string image_error(F&& load)
  {
    const int loads = fake().count("cuModuleLoadDataEx");
    try {
      load();
    } catch (const kjit::ImageError& e) {
      BOOST_TEST(fake().count("cuModuleLoadDataEx") == loads);
      return e.what();
    }
    BOOST_ERROR("expected ImageError");
    return {};
  }
};

const std::uint64_t k_null = 0;

} // namespace

BOOST_FIXTURE_TEST_SUITE(load, Load)

BOOST_AUTO_TEST_CASE(an_uncached_compile_result_loads_once_and_launches_checked)
{
  {
    const kjit::Binary binary =
      kjit::compile({"scale.cu", kjit::test::k_scale, {}, {}, {"scale<float>"}}, kjit::Arch::parse("sm_90"));
    const kjit::Context context = kjit::Context::primary(0);
    const kjit::Module module = context.load(binary);
    BOOST_TEST(module.image_kind() == "cubin");
    BOOST_TEST(!module.loaded_from_ptx());
    // The same content again: the module this context has already.
    BOOST_TEST(context.load(binary).handle() == module.handle());
    BOOST_TEST(fake().count("cuModuleLoadDataEx ctx=P0 cubin -> M") == 1, fake().log());
    const kjit::Kernel kernel = module.kernel("scale<float>");  // name expressions from the Binary
    kernel.launch({{1}, {32}}, k_null, 0.5f, 32);
    BOOST_CHECK_THROW(kernel.launch({{1}, {32}}, k_null, 0.5, 32), kjit::LaunchError);  // checked
    // Named as the caller says in driver errors.
    try {
      context.load(binary, {"my kernels"}).kernel("nope");
      BOOST_ERROR("expected CudaError");
    } catch (const kjit::CudaError& e) {
      BOOST_TEST(std::string(e.what()).find("of my kernels on device 0") != std::string::npos, e.what());
    }
  }
  check_clean();
}

BOOST_AUTO_TEST_CASE(raw_cubin_and_ptx_bytes_and_files_load)
{
  {
    const kjit::Binary binary = kjit::compile({"saxpy.cu", kjit::test::k_saxpy, {}, {}, {}}, kjit::Arch::parse("sm_90"));
    const kjit::Context context = kjit::Context::primary(0);
    const kjit::Module cubin = context.load_image(binary.cubin);
    BOOST_TEST(cubin.image_kind() == "cubin");
    cubin.kernel("saxpy").launch({{1}, {32}}, 2.0f, k_null, k_null, 3);
    BOOST_CHECK_THROW(cubin.kernel("saxpy").launch({{1}, {32}}, 2.0f, k_null, k_null), kjit::LaunchError);
    // PTX with no terminating NUL (as read from a file) and with one.
    const kjit::Module ptx = context.load_image(binary.ptx);
    BOOST_TEST(ptx.image_kind() == "ptx");
    BOOST_TEST(ptx.loaded_from_ptx());
    std::string terminated = binary.ptx;
    terminated.push_back('\0');
    BOOST_TEST(context.load_image(terminated).handle() == ptx.handle());
    ptx.kernel("saxpy").launch({{1}, {32}}, 2.0f, k_null, k_null, 9);
    BOOST_TEST(std::string(fake().last_params()).substr(48) == "09000000");

    const std::string path = tmp.path() + "/saxpy.sm_90.cubin";
    kjit::test::write_text(path, binary.cubin);
    const kjit::Module file = context.load_file(path);
    BOOST_TEST(file.handle() != cubin.handle());  // another name: another module
    try {
      file.kernel("missing");
      BOOST_ERROR("expected CudaError");
    } catch (const kjit::CudaError& e) {
      BOOST_TEST(std::string(e.what()).find(path) != std::string::npos, e.what());
    }
  }
  check_clean();
}

BOOST_AUTO_TEST_CASE(a_fatbin_made_by_the_toolkit_loads)
{
  const char* tool = std::getenv("KJIT_TEST_FATBINARY");
  BOOST_TEST_REQUIRE(tool != nullptr);
  if (!kjit::test::exists(tool)) {
    BOOST_TEST_MESSAGE("no fatbinary in the toolkit: skipped");
    return;
  }
  {
    const kjit::Binary binary = kjit::compile({"fat.cu", kjit::test::k_saxpy, {}, {}, {}}, kjit::Arch::parse("sm_90"));
    const std::string cubin = tmp.path() + "/fat.cubin";
    const std::string fatbin = tmp.path() + "/fat.fatbin";
    kjit::test::write_text(cubin, binary.cubin);
    std::string output;
    BOOST_TEST_REQUIRE(kjit::test::run(std::string(tool) + " --create=" + fatbin + " --image3=kind=elf,sm=90,file=" +
                                         cubin + " 2>&1", output) == 0, output);
    const kjit::Context context = kjit::Context::primary(0);
    const kjit::Module module = context.load_file(fatbin);
    BOOST_TEST(module.image_kind() == "fatbin");
    BOOST_TEST(fake().count(" fatbin -> M") == 1, fake().log());
    module.kernel("saxpy").launch({{1}, {32}}, 2.0f, k_null, k_null, 4);
    // Truncated: refused before the driver sees it.
    const std::string bytes = kjit::test::read_text(fatbin);
    const std::string what = image_error([&] { context.load_image(std::string_view(bytes).substr(0, bytes.size() / 2)); });
    BOOST_TEST(what.find("truncated or malformed fatbin") != std::string::npos, what);
  }
  check_clean();
}

BOOST_AUTO_TEST_CASE(what_is_not_an_image_is_an_image_error_before_the_driver)
{
  {
    const kjit::Binary binary = kjit::compile({"bad.cu", kjit::test::k_saxpy, {}, {}, {}}, kjit::Arch::parse("sm_90"));
    const kjit::Context context = kjit::Context::primary(0);
    std::string what = image_error([&] { context.load_image("hello, world", {"greeting"}); });
    BOOST_TEST(what.find("greeting: neither a cubin (ELF), a fatbin nor PTX text") != std::string::npos, what);
    what = image_error([&] { context.load_image(std::string_view(binary.cubin).substr(0, 100)); });
    BOOST_TEST(what.find("not a loadable cubin") != std::string::npos, what);
    std::string flipped = binary.cubin;
    flipped[0x3c] = '\x7f';  // e_shnum: more sections than the file holds
    what = image_error([&] { context.load_image(flipped); });
    BOOST_TEST(what.find("not a loadable cubin") != std::string::npos, what);
    what = image_error([&] { context.load_image(std::string(binary.ptx) + std::string(1, '\0') + "x"); });
    BOOST_TEST(what.find("neither") != std::string::npos, what);
    what = image_error([&] { context.load(kjit::Binary{}); });
    BOOST_TEST(what.find("neither a cubin nor PTX") != std::string::npos, what);
    // A fatbin header whose own size runs past the image: refused, not read past its end.
    std::string header("\x50\xed\x55\xba\x01\x00\x40\x00\x30\x00\x00\x00\x00\x00\x00\x00", 16);
    what = image_error([&] { context.load_image(header, {"short fatbin"}); });
    BOOST_TEST(what.find("short fatbin: a truncated or malformed fatbin") != std::string::npos, what);

    what = image_error([&] { context.load_file(tmp.path() + "/missing.cubin"); });
    BOOST_TEST(what.find("cannot read " + tmp.path() + "/missing.cubin: No such file") != std::string::npos, what);
    const std::string fifo = tmp.path() + "/fifo";
    BOOST_TEST_REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    what = image_error([&] { context.load_file(fifo); });  // never opened: it would block
    BOOST_TEST(what.find("is not a regular file") != std::string::npos, what);
    try {
      context.load_file(tmp.path());
      BOOST_ERROR("expected ImageError");
    } catch (const kjit::ImageError& e) {
      BOOST_TEST(e.name() == tmp.path());
    }
  }
  check_clean();
}

// PTX with or without its NUL is one image; a cubin without its last bytes (zeros: an ELF header
// field) is a truncated cubin, an ImageError even once the whole one is loaded.
BOOST_AUTO_TEST_CASE(a_truncated_cubin_is_an_image_error_after_the_whole_one_loaded)
{
  {
    const kjit::Binary binary =
      kjit::compile({"trailing.cu", kjit::test::k_saxpy, {}, {}, {}}, kjit::Arch::parse("sm_90"));
    BOOST_TEST_REQUIRE(binary.cubin.back() == '\0');
    std::size_t zeros = 0;
    while (binary.cubin[binary.cubin.size() - 1 - zeros] == '\0') {
      ++zeros;
    }
    const kjit::Context context = kjit::Context::primary(0);
    const kjit::Module whole = context.load_image(binary.cubin, {"trailing"});
    const std::string_view truncated = std::string_view(binary.cubin).substr(0, binary.cubin.size() - zeros);
    const std::string what = image_error([&] { context.load_image(truncated, {"trailing"}); });
    BOOST_TEST(what.find("trailing: not a loadable cubin") != std::string::npos, what);
    const kjit::Module ptx = context.load_image(binary.ptx, {"trailing ptx"});
    BOOST_TEST(context.load_image(binary.ptx + std::string(1, '\0'), {"trailing ptx"}).handle() == ptx.handle());
  }
  check_clean();
}

BOOST_AUTO_TEST_CASE(driver_refusals_name_the_image_and_carry_the_jit_log)
{
  {
    const kjit::Context context = kjit::Context::primary(0);  // sm_90
    const kjit::Binary sm80 = kjit::compile({"old.cu", kjit::test::k_saxpy, {}, {}, {}}, kjit::Arch::parse("sm_80"));
    try {
      context.load(sm80, {"old kernels"});
      BOOST_ERROR("expected CudaError");
    } catch (const kjit::CudaError& e) {
      BOOST_TEST(e.result() == 209);
      BOOST_TEST(std::string(e.what()).find("old kernels (sm_80 cubin) on device 0") != std::string::npos, e.what());
    }
    // PTX for a newer device than this one: the driver's JIT says why, and the message carries it.
    const kjit::Binary sm100 =
      kjit::compile({"new.cu", kjit::test::k_saxpy, {}, {}, {}}, kjit::Arch::parse("compute_100"));
    try {
      context.load(sm100);
      BOOST_ERROR("expected CudaError");
    } catch (const kjit::CudaError& e) {
      BOOST_TEST(e.result() == 218);
      BOOST_TEST(std::string(e.what()).find("SM version specified by .target is higher") != std::string::npos,
                 e.what());
    }
    BOOST_TEST(context.loaded_modules() == 0u);
  }
  check_clean();
}

BOOST_AUTO_TEST_CASE(ptx_loads_get_the_programs_jit_options)
{
  {
    // KJIT_FORCE_PTX used to drop -maxrregcount: the driver's JIT then chose its own limit.
    kjit::option::force_ptx(true);
    const kjit::Context context = kjit::Context::primary(0);
    kjit::Cache cache(kjit::current_config());
    const kjit::Program program{"jit.cu", kjit::test::k_saxpy, {}, {"-maxrregcount=32", "-lineinfo"}, {}};
    const auto prepared = cache.prepare(program, kjit::Arch::parse("sm_90"));
    const kjit::Module module = context.load(prepared, *cache.get(prepared));
    BOOST_TEST(module.loaded_from_ptx());
    BOOST_TEST(fake().count(" ptx -> M") == 1, fake().log());
    BOOST_TEST(fake().count(" maxrregcount=32 lineinfo=1") == 1, fake().log());
    // A cubin is loaded as it is: no JIT settings.
    kjit::option::force_ptx(false);
    const kjit::Module cubin = context.load(prepared, *cache.get(prepared));
    BOOST_TEST(cubin.image_kind() == "cubin");
    BOOST_TEST(fake().count(" cubin -> M") == 1, fake().log());
    BOOST_TEST(fake().count("maxrregcount") == 1, fake().log());
    // LoadOptions for a bare Binary; -G's debug info.
    context.load(*cache.get(prepared), {"debug", 0, false, true});
    BOOST_TEST(fake().count(" debug=1") == 0);  // a cubin again: nothing to JIT
    context.load_image(cache.get(prepared)->ptx, {"dbg", 0, false, true});
    BOOST_TEST(fake().count(" debug=1") == 1, fake().log());
    // A name that reads like settings is not those settings: two modules.
    const kjit::Module named = context.load_image(cache.get(prepared)->ptx, {"foo maxrregcount=32"});
    const kjit::Module limited = context.load_image(cache.get(prepared)->ptx, {"foo", 32});
    BOOST_TEST(named.handle() != limited.handle());
    BOOST_TEST(fake().count(" maxrregcount=32") == 2, fake().log());
  }
  check_clean();
}

BOOST_AUTO_TEST_CASE(a_virtual_archs_jit_options_reach_the_ptx_load)
{
  {
    // -maxrregcount for compute_XY used to be an OptionError, though the PTX load can carry it.
    const kjit::Context context = kjit::Context::primary(0);
    kjit::Cache cache(kjit::current_config());
    const kjit::Program program{"virtual_jit.cu", kjit::test::k_saxpy, {}, {"-maxrregcount=32", "-lineinfo"}, {}};
    const auto prepared = cache.prepare(program, kjit::Arch::parse("compute_90"));
    const kjit::Module module = context.load(prepared, *cache.get(prepared));
    BOOST_TEST(module.loaded_from_ptx());
    BOOST_TEST(fake().count(" maxrregcount=32 lineinfo=1") == 1, fake().log());
    // Other ptxas options have nowhere to go for a virtual arch: still refused.
    const kjit::Program ptxas{"virtual_jit.cu", kjit::test::k_saxpy, {}, {"-Xptxas=-O1"}, {}};
    BOOST_CHECK_THROW(cache.get(ptxas, kjit::Arch::parse("compute_90")), kjit::OptionError);
  }
  check_clean();
}

BOOST_AUTO_TEST_CASE(jit_options_are_read_from_nvrtc_options)
{
  const kjit::LoadOptions a = kjit::load_options_of({"-DX", "--maxrregcount=64", "--generate-line-info", "-G"});
  BOOST_TEST(a.max_registers == 64);
  BOOST_TEST(a.line_info);
  BOOST_TEST(a.debug);
  BOOST_TEST(kjit::load_options_of({"-maxrregcount", "40"}).max_registers == 40);
  const kjit::LoadOptions none = kjit::load_options_of({"-O3", "--use_fast_math"});
  BOOST_TEST(none.max_registers == 0);
  BOOST_TEST(!none.line_info);
  BOOST_TEST(!none.debug);
  BOOST_CHECK_THROW(kjit::load_options_of({"-maxrregcount=lots"}), kjit::OptionError);
  BOOST_CHECK_THROW(kjit::load_options_of({"-maxrregcount=0"}), kjit::OptionError);
  BOOST_CHECK_THROW(kjit::load_options_of({"-maxrregcount"}), kjit::OptionError);
}

BOOST_AUTO_TEST_CASE(a_prepared_program_loads_the_binary_it_is_given_after_an_edit)
{
  {
    // The module was found by the prepared program's key alone: after an edit of its header,
    // get(prepared) returned the new binary but load(prepared, it) the module of the old one.
    const std::string inc = tmp.path() + "/inc";
    kjit::test::put(inc + "/v.h", "#define V 1\n");
    kjit::test::settle();
    const kjit::Context context = kjit::Context::primary(0);
    kjit::Cache cache(kjit::current_config());
    const kjit::Arch arch = kjit::Arch::parse("sm_90");
    const kjit::Program program{"edited.cu", "#include <v.h>\nextern \"C\" __global__ void k(int* o) { *o = V; }\n",
                                {}, {"-I" + inc}, {}};
    cache.get(program, arch);  // its manifest: the prepared key is final
    const auto prepared = cache.prepare(program, arch);
    BOOST_TEST_REQUIRE(!prepared.provisional());
    const auto original = cache.get(prepared);
    const kjit::Module first = context.load(prepared, *original);
    kjit::test::put(inc + "/v.h", "#define V 2\n");
    kjit::test::settle();
    const auto edited = cache.get(prepared);
    BOOST_TEST_REQUIRE(edited->cubin != original->cubin);  // the binary of V 2
    const kjit::Module second = context.load(prepared, *edited);
    BOOST_TEST(second.handle() != first.handle());  // was the first binary's module
    BOOST_TEST(fake().count(" cubin -> M") == 2, fake().log());
    // The same binary again: the module this context has.
    BOOST_TEST(context.load(prepared, *cache.get(prepared)).handle() == second.handle());
    BOOST_TEST(fake().count(" cubin -> M") == 2, fake().log());
  }
  check_clean();
}

// A PreparedProgram that prepare() did not make (default-constructed, moved from) names no binary:
// each binary loaded with one is its own module. (Before, all default ones shared one key: the
// second binary got the first one's module, where its kernel is not found.)
BOOST_AUTO_TEST_CASE(binaries_loaded_with_an_unprepared_program_are_their_own_modules)
{
  {
    const kjit::Context context = kjit::Context::primary(0);
    const kjit::Arch arch = kjit::Arch::parse("sm_90");
    const auto first = kjit::compile({"a.cu", "extern \"C\" __global__ void first(int* o) { *o = 1; }\n", {}, {}, {}}, arch);
    const auto other = kjit::compile({"b.cu", "extern \"C\" __global__ void other(int* o) { *o = 2; }\n", {}, {}, {}}, arch);
    const kjit::Module a = context.load(kjit::PreparedProgram{}, first);
    const kjit::Module b = context.load(kjit::PreparedProgram{}, other);
    BOOST_TEST(b.handle() != a.handle());
    BOOST_CHECK_NO_THROW(b.kernel("other"));
    BOOST_CHECK_NO_THROW(a.kernel("first"));
  }
  check_clean();
}

// Two programs whose binaries are one image (name expressions "k<1>" and "k<0+1>" name the same
// instance: NVRTC makes the same cubin) are two modules, each with its own lowered names
// (docs/embedding.md: loaded once per content, name, lowered names and settings). The image's
// key was taken before the binary's lowered names were given to it: the second program got the
// first one's module, where "k<0+1>" is no kernel.
BOOST_AUTO_TEST_CASE(prepared_programs_of_one_image_keep_their_own_name_expressions)
{
  {
    const kjit::Context context = kjit::Context::primary(0);
    kjit::Cache cache(kjit::current_config());
    const kjit::Arch arch = kjit::Arch::parse("sm_90");
    const std::string source = "template <int N> __global__ void k(int* o) { *o = N; }\n"
                               "template __global__ void k<1>(int*);\n";
    const kjit::Program one{"k.cu", source, {}, {}, {"k<1>"}};
    kjit::Program other = one;
    other.name_expressions = {"k<0+1>"};
    const auto first = cache.prepare(one, arch);
    const auto second = cache.prepare(other, arch);
    const auto first_binary = cache.get(first);
    const auto second_binary = cache.get(second);
    BOOST_TEST_REQUIRE(first_binary->cubin == second_binary->cubin);
    BOOST_CHECK_NO_THROW(context.load(first, *first_binary).kernel("k<1>"));
    BOOST_CHECK_NO_THROW(context.load(second, *second_binary).kernel("k<0+1>"));
    // Each again: the module this context has for it.
    BOOST_TEST(context.load(second, *second_binary).handle() == context.load(second, *cache.get(second)).handle());
    BOOST_TEST(fake().count(" cubin -> M") == 2, fake().log());
  }
  check_clean();
}

// The same for Binaries loaded by content (Context::load(Binary), no prepared key): one image
// with other lowered names is another module. A key without the lowered names gave the second
// Binary the first one's module, where "k<0+1>" is no kernel (a surviving mutant, docs/testing.md).
BOOST_AUTO_TEST_CASE(binaries_of_one_image_keep_their_own_name_expressions)
{
  {
    const kjit::Context context = kjit::Context::primary(0);
    const kjit::Arch arch = kjit::Arch::parse("sm_90");
    const std::string source = "template <int N> __global__ void k(int* o) { *o = N; }\n"
                               "template __global__ void k<1>(int*);\n";
    const kjit::Binary one = kjit::compile({"k.cu", source, {}, {}, {"k<1>"}}, arch);
    const kjit::Binary other = kjit::compile({"k.cu", source, {}, {}, {"k<0+1>"}}, arch);
    BOOST_TEST_REQUIRE(one.cubin == other.cubin);
    BOOST_CHECK_NO_THROW(context.load(one).kernel("k<1>"));
    BOOST_CHECK_NO_THROW(context.load(other).kernel("k<0+1>"));
    BOOST_TEST(context.load(other).handle() != context.load(one).handle());
    BOOST_TEST(fake().count(" cubin -> M") == 2, fake().log());
  }
  check_clean();
}

BOOST_AUTO_TEST_SUITE_END()
