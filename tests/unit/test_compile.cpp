// In-process compilation: archs, errors, name expressions, toolkit headers, threads.
#include <boost/test/unit_test.hpp>

#include <algorithm>

#include <kjit/compile.hpp>
#include <kjit/cubin.hpp>
#include <kjit/error.hpp>

#include "../common/sample_kernels.hpp"

#include <csignal>
#include <filesystem>
#include <thread>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

kjit::Program saxpy()
{
  return {"saxpy.cu", kjit::test::k_saxpy, {}, {}, {}};
}

} // namespace

BOOST_AUTO_TEST_SUITE(compile)

BOOST_AUTO_TEST_CASE(builds_a_checked_cubin_for_every_major_arch)
{
  for (int sm : {75, 80, 90, 100, 120}) {
    const auto arch = kjit::Arch::parse("sm_" + std::to_string(sm));
    const kjit::Binary binary = kjit::compile(saxpy(), arch);
    std::string why;
    BOOST_TEST(kjit::check_cubin(binary.cubin, sm, why), "sm_" << sm << ": " << why);
    BOOST_TEST(binary.ptx.find(".target sm_" + std::to_string(sm)) != std::string::npos);
    BOOST_TEST(binary.cubin.find("saxpy") != std::string::npos);
    BOOST_TEST(binary.arch == arch.str());
    BOOST_TEST(binary.cubin_path == "nvrtc");
    BOOST_TEST(binary.timings.nvrtc_ms > 0.0);
    BOOST_TEST(binary.timings.link_ms == 0.0);  // NVRTC made the cubin in the same compile
    BOOST_TEST(binary.timings.total_ms >= binary.timings.nvrtc_ms);
  }
}

BOOST_AUTO_TEST_CASE(arch_specific_and_virtual_targets)
{
  const kjit::Binary sm90a = kjit::compile(saxpy(), kjit::Arch::parse("sm_90a"));
  std::string why;
  BOOST_TEST(kjit::check_cubin(sm90a.cubin, 90, why), why);
  BOOST_TEST(sm90a.ptx.find(".target sm_90a") != std::string::npos);

  const kjit::Binary ptx_only = kjit::compile(saxpy(), kjit::Arch::parse("compute_80"));
  BOOST_TEST(ptx_only.cubin.empty());
  BOOST_TEST(ptx_only.ptx.find(".entry saxpy") != std::string::npos);
  BOOST_TEST(ptx_only.timings.link_ms == 0.0);
  BOOST_TEST(ptx_only.cubin_path == "none");
}

BOOST_AUTO_TEST_CASE(syntax_error_is_a_compile_error_naming_the_line)
{
  kjit::Program bad{"broken.cu", "__global__ void k(int* p)\n{\n  *p = 1\n}\n", {}, {"-DX=1"}, {}};
  try {
    kjit::compile(bad, kjit::Arch::parse("sm_90"));
    BOOST_FAIL("expected CompileError");
  } catch (const kjit::CompileError& e) {
    BOOST_TEST(e.log().find("broken.cu(4)") != std::string::npos, e.log());
    BOOST_TEST(e.program_name() == "broken.cu");
    BOOST_TEST(e.arch() == "sm_90");
    BOOST_TEST((std::find(e.options().begin(), e.options().end(), "-DX=1") != e.options().end()));
    BOOST_TEST(std::string(e.what()).find("broken.cu") != std::string::npos);
  }
}

BOOST_AUTO_TEST_CASE(unknown_option_and_unsupported_arch_have_their_own_errors)
{
  kjit::Program with_bad_option = saxpy();
  with_bad_option.options = {"--no-such-option"};
  BOOST_CHECK_THROW(kjit::compile(with_bad_option, kjit::Arch::parse("sm_90")), kjit::OptionError);

  kjit::Program with_arch_option = saxpy();
  with_arch_option.options = {"-arch=sm_80"};
  BOOST_CHECK_THROW(kjit::compile(with_arch_option, kjit::Arch::parse("sm_90")), kjit::OptionError);

  // Options for ptxas and NVVM pass through NVRTC, which reports their rejection as a failed
  // compile: they were CompileErrors (and remembered by the cache as the program's).
  // ptxas's other verdicts on its options ("argument expected after", "expected a number") and
  // the same options on the nvJitLink -lto path (where they were CompileErrors) too.
  for (const std::vector<std::string>& options : std::vector<std::vector<std::string>>{
         {"-Xptxas=-bogus"}, {"--ptxas-options=--no-such"}, {"-Xptxas=--maxrregcount=abc"}, {"-Xnvvm=-bogus"},
         {"-Xptxas=--maxrregcount"}, {"-Xptxas=-O1 -v"}, {"-dlto", "-Xptxas=-bogus"}, {"-dlto", "-Xptxas=--"},
         {"-dlto", "-Xptxas=-arch"}, {"-dlto", "-Xptxas=--maxrregcount=-"}, {"-dlto", "-Xptxas=-O3,-v"}}) {
    const std::string option = options.back();
    kjit::Program passed_on = saxpy();
    passed_on.options = options;
    try {
      kjit::compile(passed_on, kjit::Arch::parse("sm_90"));
      BOOST_ERROR(option << ": expected OptionError");
    } catch (const kjit::OptionError& e) {
      BOOST_TEST(std::string(e.what()).find("saxpy.cu") != std::string::npos, e.what());
    } catch (const kjit::Error& e) {
      BOOST_ERROR(option << ": " << e.what());
    }
  }

  // A program's own error whose message looks like such a rejection (a static_assert's text with
  // a newline, a #pragma message, a #warning before an #error) stays a CompileError: it was an
  // OptionError, which the cache does not remember, so every get() compiled it again.
  for (const char* source : {"static_assert(sizeof(int) == 3, \"bad\\nptxas fatal   : Unknown option 'x'\");\n",
                             "#pragma message(\"x\\nlibnvvm : error: -x is an unsupported option\")\n#error no\n",
                             "#warning ptxas fatal   : Invalid value 'x' for option 'y'\n#error no\n"}) {
    kjit::Program own{"own_error.cu", source, {}, {}, {}};
    try {
      kjit::compile(own, kjit::Arch::parse("sm_90"));
      BOOST_ERROR(source << ": expected CompileError");
    } catch (const kjit::CompileError& e) {
      BOOST_TEST(e.log().find("own_error.cu(") != std::string::npos, e.log());
    } catch (const kjit::Error& e) {
      BOOST_ERROR(source << ": " << e.what());
    }
  }

  try {
    kjit::compile(saxpy(), kjit::Arch::parse("sm_70"));
    BOOST_FAIL("expected ArchError");
  } catch (const kjit::ArchError& e) {
    BOOST_TEST(std::string(e.what()).find("sm_70") != std::string::npos);
    BOOST_TEST(std::string(e.what()).find("supported") != std::string::npos);
  }
}

// NVRTC 13.0 throws std::out_of_range through nvrtcCompileProgram, which ends the process
// (std::terminate), for these options with nothing after their '=' (as it reads them: trimmed).
// kjit passed them on: the host application aborted. They are OptionErrors; given as the value of
// an option before ("-I" "-Xptxas=": the folder "-Xptxas="), NVRTC reads them as values.
BOOST_AUTO_TEST_CASE(options_that_abort_nvrtc_are_option_errors)
{
  for (const char* option : {"-Xptxas=", "--ptxas-options=", "-Xnvvm=", "-Xcudafe=", "-dopt=", "--dopt=", "-Ofc=",
                             "--Ofast-compile=", "-Xptxas= ", " -Ofc="}) {
    for (const char* arch : {"sm_90", "compute_90"}) {
      kjit::Program program = saxpy();
      program.options = {"-DX=1", option};
      try {
        kjit::compile(program, kjit::Arch::parse(arch));
        BOOST_ERROR(option << ": expected OptionError");
      } catch (const kjit::OptionError&) {
      } catch (const kjit::Error& e) {
        BOOST_ERROR(option << ": " << e.what());
      }
    }
  }
  kjit::Program program = saxpy();
  program.options = {"-I", "-Xptxas="};
  BOOST_CHECK_NO_THROW(kjit::compile(program, kjit::Arch::parse("sm_90")));
}

// NVRTC 13.0 aborts the process ("Program aborted due to an unhandled Error: Could not open
// X.json") when the file of -fdevice-time-trace=X can't be made (a missing folder, a file where
// the folder should be). kjit passed the option on; it is an OptionError when X.json can't be
// written, and compiles (writing X.json) when it can.
BOOST_AUTO_TEST_CASE(a_time_trace_file_that_cannot_be_written_is_an_option_error)
{
  const std::string dir = "/tmp/kjit_time_trace_" + std::to_string(::getpid());
  BOOST_TEST_REQUIRE(::mkdir(dir.c_str(), 0700) == 0);
  for (const std::string& option : {"-fdevice-time-trace=" + dir + "/missing/x", "--fdevice-time-trace=" + dir + "/missing/x",
                                    std::string("-fdevice-time-trace=/proc/kjit/x")}) {
    kjit::Program program = saxpy();
    program.options = {option};
    BOOST_CHECK_THROW(kjit::compile(program, kjit::Arch::parse("sm_90")), kjit::OptionError);
  }
  kjit::Program program = saxpy();
  program.options = {"-fdevice-time-trace=" + dir + "/trace"};
  BOOST_CHECK_NO_THROW(kjit::compile(program, kjit::Arch::parse("sm_90")));
  BOOST_TEST(::unlink((dir + "/trace.json").c_str()) == 0);
  // A file where the folder should be.
  program.options = {"-fdevice-time-trace=" + dir + "/file/x"};
  BOOST_TEST_REQUIRE(::close(::open((dir + "/file").c_str(), O_CREAT | O_WRONLY, 0600)) == 0);
  BOOST_CHECK_THROW(kjit::compile(program, kjit::Arch::parse("sm_90")), kjit::OptionError);
  ::unlink((dir + "/file").c_str());
  // -fdevice-time-trace=- names the file by the program: NVRTC writes "<program name>.json" and
  // aborted the process when that folder is missing (kjit checked "-.json" in the working
  // directory). Run in a child: before the check, the abort ended the process.
  const pid_t child = ::fork();
  BOOST_TEST_REQUIRE(child >= 0);
  if (child == 0) {
    kjit::Program named = saxpy();
    named.name = dir + "/missing/saxpy.cu";
    named.options = {"-fdevice-time-trace=-"};
    try {
      kjit::compile(named, kjit::Arch::parse("sm_90"));
    } catch (const kjit::OptionError& e) {
      ::_exit(std::string(e.what()).find("-fdevice-time-trace=-") != std::string::npos ? 0 : 2);
    } catch (...) {
      ::_exit(3);
    }
    ::_exit(4);
  }
  int status = 0;
  BOOST_TEST_REQUIRE(::waitpid(child, &status, 0) == child);
  BOOST_TEST((WIFEXITED(status) && WEXITSTATUS(status) == 0),
             "the child: " << (WIFEXITED(status) ? "exit " + std::to_string(WEXITSTATUS(status))
                                                  : "signal " + std::to_string(WTERMSIG(status))));
  ::rmdir(dir.c_str());
}

// A compile that runs out of room for a file NVRTC maps (here its PCH, under a file size limit with
// SIGXFSZ ignored: "catastrophic error: unable to obtain mapped memory") is a ToolchainError, not
// the program's CompileError, which a cache would remember and serve on every later lookup. Run
// in a child: the limit is the process's. (Before, a CompileError.)
BOOST_AUTO_TEST_CASE(running_out_of_room_for_a_file_is_not_the_program_s_error)
{
  const std::string dir = "/tmp/kjit_pch_limit_" + std::to_string(::getpid());
  BOOST_TEST_REQUIRE(::mkdir(dir.c_str(), 0700) == 0);
  const pid_t child = ::fork();
  BOOST_TEST_REQUIRE(child >= 0);
  if (child == 0) {
    ::signal(SIGXFSZ, SIG_IGN);
    const rlimit limit{2 << 20, 2 << 20};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    kjit::Program program;
    program.name = "heavy.cu";
    program.source = "#include <cuda_fp16.h>\n#include <cuda/std/complex>\n"
                     "extern \"C\" __global__ void h(__half* p) { p[0] = __hadd(p[0], p[1]); }\n";
    program.options = {"-pch", "--pch-dir=" + dir};
    try {
      kjit::compile(program, kjit::Arch::parse("sm_90"));
      ::_exit(4);  // the PCH was written after all: nothing was checked
    } catch (const kjit::ToolchainError& e) {
      ::_exit(std::string(e.what()).find("unable to obtain mapped memory") != std::string::npos ? 0 : 2);
    } catch (const kjit::CompileError&) {
      ::_exit(1);
    } catch (...) {
      ::_exit(3);
    }
  }
  int status = 0;
  BOOST_TEST_REQUIRE(::waitpid(child, &status, 0) == child);
  BOOST_TEST((WIFEXITED(status) && WEXITSTATUS(status) == 0),
             "the child: " << (WIFEXITED(status) ? "exit " + std::to_string(WEXITSTATUS(status))
                                                  : "signal " + std::to_string(WTERMSIG(status))));
  std::filesystem::remove_all(dir);
}

// NVRTC 13.0 reads the value of -jtd and -split-compile with std::stoi: "-" and numbers out of
// int's range throw through nvrtcCompileProgram (std::terminate), and -split-compile=2147483647
// is a SIGSEGV (N threads: 30000 took 322 MB, 65536 was killed for memory). kjit passed them on;
// they are OptionErrors, given after '=' or apart. Values NVRTC takes still compile.
BOOST_AUTO_TEST_CASE(int_option_values_that_crash_nvrtc_are_option_errors)
{
  for (const std::vector<std::string>& options : std::vector<std::vector<std::string>>{
         {"-jtd=-"}, {"--jump-table-density=- "}, {"-jtd", "-"}, {"-jtd=2147483648"}, {"-jtd", "-99999999999"},
         {"-split-compile=-"}, {"--split-compile", "4294967296"}, {"-split-compile=2147483647"}, {"-split-compile=1025"}}) {
    kjit::Program program = saxpy();
    program.options = options;
    try {
      kjit::compile(program, kjit::Arch::parse("sm_90"));
      BOOST_ERROR(options.front() << ": expected OptionError");
    } catch (const kjit::OptionError&) {
    } catch (const kjit::Error& e) {
      BOOST_ERROR(options.front() << ": " << e.what());
    }
  }
  for (const std::vector<std::string>& options : std::vector<std::vector<std::string>>{
         {"-jtd=5"}, {"-jtd", "007"}, {"--split-compile=4"}, {"-split-compile", "0"}, {"-split-compile=1024"}}) {
    kjit::Program program = saxpy();
    program.options = options;
    BOOST_CHECK_NO_THROW(kjit::compile(program, kjit::Arch::parse("sm_90")));
  }
}

// NVRTC takes the value of "-I", "-Xptxas"... given alone from the next option: as the program's
// last option, that was kjit's own "-arch=compute_90", so NVRTC compiled for its default arch
// (sm_75 PTX, __CUDA_ARCH__ 750) and kjit::compile returned it as compute_90; other such options
// failed as a ToolchainError ("bad cubin") or a CompileError. An option missing its value is an
// OptionError.
BOOST_AUTO_TEST_CASE(an_option_missing_its_value_is_an_option_error)
{
  for (const std::vector<std::string>& options : std::vector<std::vector<std::string>>{
         {"-I"}, {"--include-path"}, {"-DX=1", "-D"}, {"-Xptxas"}, {"--ptxas-options"}, {"-Xnvvm"}, {"-Xcudafe"},
         {"-include"}, {"-maxrregcount"}, {"-ftz"}, {"-Ofc"}, {" -I "}}) {
    for (const char* arch : {"sm_90", "compute_90"}) {
      kjit::Program program = saxpy();
      program.options = options;
      try {
        const kjit::Binary binary = kjit::compile(program, kjit::Arch::parse(arch));
        BOOST_ERROR(options.back() << " (" << arch << "): no error, " << binary.ptx.substr(binary.ptx.find(".target"), 14));
      } catch (const kjit::OptionError&) {
      } catch (const kjit::Error& e) {
        BOOST_ERROR(options.back() << " (" << arch << "): " << e.what());
      }
    }
  }
  kjit::Program program = saxpy();
  program.options = {"-I", "-I"};  // the folder "-I", then nothing open
  program.options.push_back("-DX=1");
  BOOST_CHECK_NO_THROW(kjit::compile(program, kjit::Arch::parse("compute_90")));
}

BOOST_AUTO_TEST_CASE(name_expressions_give_mangled_names)
{
  kjit::Program program{"scale.cu",
                        kjit::test::k_scale,
                        {},
                        {},
                        {"scale<float>", "scale<double>", "&scale<int>"}};
  const kjit::Binary binary = kjit::compile(program, kjit::Arch::parse("sm_90"));
  BOOST_TEST(binary.lowered_names.size() == 3u);
  // Itanium ABI: scale<float>(float*, float, int).
  BOOST_TEST(binary.lowered_name("scale<float>") == "_Z5scaleIfEvPT_S0_i");
  BOOST_TEST(binary.lowered_name("scale<double>") == "_Z5scaleIdEvPT_S0_i");
  BOOST_TEST(binary.lowered_name("&scale<int>") == "_Z5scaleIiEvPT_S0_i");
  for (const auto& [expression, lowered] : binary.lowered_names) {
    BOOST_TEST(binary.cubin.find(lowered) != std::string::npos, expression);
  }
  BOOST_CHECK_THROW(binary.lowered_name("scale<char>"), kjit::Error);
}

BOOST_AUTO_TEST_CASE(toolkit_headers_need_no_flags)
{
  kjit::Program program{"half.cu",
                        "#include <cuda_fp16.h>\n#include <cuda/std/array>\n"
                        "extern \"C\" __global__ void h(__half* x) {\n"
                        "  cuda::std::array<int, 2> a{1, 2};\n"
                        "  x[threadIdx.x] = __hadd(x[threadIdx.x], __int2half_rn(a[1]));\n}\n",
                        {},
                        {},
                        {}};
  const kjit::Binary binary = kjit::compile(program, kjit::Arch::parse("sm_80"));
  std::string why;
  BOOST_TEST(kjit::check_cubin(binary.cubin, 80, why), why);
}

BOOST_AUTO_TEST_CASE(in_memory_headers_are_used)
{
  kjit::Program program{"uses_header.cu", "#include \"params.h\"\n__global__ void k(int* p) { *p = MAGIC; }\n",
                        {{"params.h", "#define MAGIC 123454321\n"}}, {}, {}};
  const kjit::Binary binary = kjit::compile(program, kjit::Arch::parse("compute_90"));
  BOOST_TEST(binary.ptx.find("123454321") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(four_threads_compile_different_programs_at_once)
{
  std::vector<std::thread> threads;
  std::vector<std::string> cubins(4);
  std::vector<std::string> errors(4);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t, &cubins, &errors] {
      try {
        kjit::Program program{"thread" + std::to_string(t) + ".cu",
                              "extern \"C\" __global__ void k" + std::to_string(t) + "(int* p) { *p = " +
                                std::to_string(1000 + t) + "; }\n",
                              {},
                              {},
                              {}};
        cubins[t] = kjit::compile(program, kjit::Arch::parse("sm_90")).cubin;
      } catch (const std::exception& e) {
        errors[t] = e.what();
      }
    });
  }
  for (auto& thread : threads) {
    thread.join();
  }
  for (int t = 0; t < 4; ++t) {
    BOOST_TEST(errors[t].empty(), errors[t]);
    std::string why;
    BOOST_TEST(kjit::check_cubin(cubins[t], 90, why), why);
    BOOST_TEST(cubins[t].find("k" + std::to_string(t)) != std::string::npos);
  }
}

BOOST_AUTO_TEST_CASE(versions_are_reported)
{
  const kjit::ToolchainVersions v = kjit::toolchain_versions();
  BOOST_TEST(v.nvrtc_major >= 12);
  BOOST_TEST(v.nvjitlink_major >= 12);
  BOOST_TEST(kjit::nvrtc_loaded());
  BOOST_TEST(kjit::nvjitlink_loaded());
}

BOOST_AUTO_TEST_SUITE_END()
