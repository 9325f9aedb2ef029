// Options as NVRTC reads them: a cached result equals plain NVRTC given the same option strings,
// whatever white space they carry, and a pre-include is the in-memory header NVRTC takes.
#include <boost/test/unit_test.hpp>

#include "fixture.hpp"

#include "rtc/compiler.hpp"

#include <cstring>
#include <unistd.h>

using namespace kjit::test;

namespace {

const kjit::Arch k_arch = kjit::Arch::parse("compute_80");

// The value the kernel stores ("mov.u32 %r1, N;"), or the error's first line.
std::string value_in(const std::string& ptx)
{
  const char* marker = "mov.u32 \t%r1, ";
  const auto at = ptx.find(marker);
  if (at == std::string::npos) {
    return "?";
  }
  const auto start = at + std::strlen(marker);
  return ptx.substr(start, ptx.find(';', start) - start);
}

std::string plain(const kjit::Config& config, const kjit::Program& program)
{
  try {
    return value_in(kjit::rtc::compile(config, program, k_arch).ptx);
  } catch (const kjit::Error& e) {
    return std::string("error: ") + e.what();
  }
}

std::string cached(kjit::Cache& cache, const kjit::Program& program)
{
  try {
    return value_in(cache.get(program, k_arch)->ptx);
  } catch (const kjit::Error& e) {
    return std::string("error: ") + e.what();
  }
}

// After each edit of `header`, a new Cache and the first one both give plain NVRTC's value.
void edits_are_seen_(const kjit::Config& config, const kjit::Program& program, const std::string& header)
{
  kjit::Cache first(config);
  for (int value = 1; value <= 3; ++value) {
    put(header, "#define V " + std::to_string(value) + "\n");
    settle();
    kjit::Cache fresh(config);
    const std::string want = plain(config, program);
    BOOST_TEST(want == std::to_string(value));
    BOOST_TEST(cached(fresh, program) == want);
    BOOST_TEST(cached(first, program) == want);
  }
}

const char* k_kernel = "extern \"C\" __global__ void k(int* o) { *o = V; }\n";

} // namespace

BOOST_FIXTURE_TEST_SUITE(key_options, CacheFixture)

// NVRTC trims white space (" \t\n\v\f\r") off both ends of each option: "-include=pre.h " reads
// pre.h. kjit looked for "pre.h " (none), passed the option on, and NVRTC read pre.h on disk
// itself: an edit of it was served the first binary.
BOOST_AUTO_TEST_CASE(a_pre_include_with_white_space_around_it_is_the_file_nvrtc_reads)
{
  const std::string d = tmp.path() + "/pre";
  const std::string pre = d + "/pre.h";
  int n = 0;
  for (const std::vector<std::string>& options : std::vector<std::vector<std::string>>{
         {"-include=" + pre + " "}, {" --pre-include=" + pre}, {"--pre-include", " " + pre + "\t"}, {"-include", pre + "\n"}}) {
    config.cache_dir = tmp.path() + "/cache" + std::to_string(++n);
    const kjit::Program program{d + "/k.cu", k_kernel, {}, options, {}};
    edits_are_seen_(config, program, pre);
  }
}

// " -Iinc" is the folder inc to NVRTC; kjit took it for another option and passed it on, so NVRTC
// read inc's headers itself. "-I inc" (a space after -I) is inc too: kjit refused it.
BOOST_AUTO_TEST_CASE(an_include_folder_with_white_space_around_it_is_the_folder_nvrtc_reads)
{
  const std::string d = tmp.path() + "/folder";
  const std::string source = "#include <x.h>\n" + std::string(k_kernel);
  int n = 0;
  for (const std::vector<std::string>& options : std::vector<std::vector<std::string>>{
         {" -I" + d + "/inc"}, {"-I" + d + "/inc\n"}, {"--include-path", "\t" + d + "/inc "}, {"-I " + d + "/inc"}}) {
    config.cache_dir = tmp.path() + "/cache" + std::to_string(++n);
    const kjit::Program program{d + "/k.cu", source, {}, options, {}};
    edits_are_seen_(config, program, d + "/inc/x.h");
  }
}

// NVRTC trims an option given apart ("-I" "\tinc" is the folder inc) but not the value of one
// written with its flag ("-I \tinc" and "-I\tinc" are the folder "\tinc", measured with NVRTC
// 13.0). kjit split "-I \tinc" in two: NVRTC then read inc, while the key (of prepare()) held
// "\tinc"'s header. And the value of an option given apart is not split: "-I" "-I inc" is the
// folder "-I inc" to NVRTC, which kjit made "-I" "-I" "inc".
BOOST_AUTO_TEST_CASE(a_value_after_a_space_is_read_as_nvrtc_reads_it_in_one_option)
{
  const std::string d = tmp.path() + "/tab";
  put(d + "/inc/x.h", "#define V 1\n");
  put(d + "/\tinc/x.h", "#define V 2\n");
  put(d + "/-I inc/x.h", "#define V 4\n");
  settle();
  InDir in(d);
  const std::string source = "#include <x.h>\n" + std::string(k_kernel);
  int n = 0;
  for (const auto& [options, header] : std::vector<std::pair<std::vector<std::string>, std::string>>{
         {{"-I \tinc"}, "\tinc/x.h"}, {{"-I  \tinc "}, "\tinc/x.h"}, {{"-I", "-I inc"}, "-I inc/x.h"}}) {
    config.cache_dir = tmp.path() + "/cache" + std::to_string(++n);
    const kjit::Program program{"k.cu", source, {}, options, {}};
    kjit::Cache cache(config);
    const kjit::PreparedProgram prepared = cache.prepare(program, k_arch);
    for (int value = 5; value <= 6; ++value) {
      put(d + "/" + header, "#define V " + std::to_string(value) + "\n");
      settle();
      BOOST_TEST(cached(cache, program) == std::to_string(value));
      try {
        BOOST_TEST(value_in(cache.get(prepared)->ptx) == std::to_string(value));
      } catch (const kjit::Error& e) {
        BOOST_TEST(e.what() == "no error");
      }
      kjit::Cache fresh(config);
      BOOST_TEST(cached(fresh, program) == std::to_string(value));
    }
  }
}

// "-lineinfo " is -lineinfo to NVRTC: the PTX names the source by the working directory. kjit
// missed it, found the program by its raw inputs (which hold no working directory) and served
// the binary made in another folder.
BOOST_AUTO_TEST_CASE(line_info_with_white_space_is_looked_up_with_the_working_directory)
{
  put(tmp.path() + "/a/.keep", "");
  put(tmp.path() + "/b/.keep", "");
  const kjit::Program program{"k.cu", "extern \"C\" __global__ void k(int* o) { *o = 1; }\n", {}, {"-lineinfo "}, {}};
  const auto file_of = [](const std::string& ptx) {
    const auto at = ptx.find(".file");
    return at == std::string::npos ? std::string("none") : ptx.substr(at, ptx.find('\n', at) - at);
  };
  kjit::Cache cache(config);
  for (const char* dir : {"/a", "/b", "/a"}) {
    InDir in(tmp.path() + dir);
    const std::string want = file_of(kjit::rtc::compile(config, program, k_arch).ptx);
    BOOST_TEST(want.find(tmp.path() + dir + "/k.cu") != std::string::npos);
    BOOST_TEST(file_of(cache.get(program, k_arch)->ptx) == want);
    kjit::Cache fresh(config);
    BOOST_TEST(file_of(fresh.get(program, k_arch)->ptx) == want);
  }
}

// The same options with white space are the same key (NVRTC reads them alike), and " -arch=…"
// is refused as "-arch=…" is (NVRTC would read it as the arch).
BOOST_AUTO_TEST_CASE(options_with_white_space_are_the_options_nvrtc_reads)
{
  kjit::Cache cache(config);
  const kjit::Program program{"k.cu", k_kernel, {}, {"-DV=7"}, {}};
  kjit::Program spaced = program;
  spaced.options = {" -DV=7\n"};
  BOOST_TEST(cache.prepare(program, k_arch).key() == cache.prepare(spaced, k_arch).key());
  spaced.options = {"-D V=7"};
  BOOST_TEST(cache.prepare(program, k_arch).key() == cache.prepare(spaced, k_arch).key());
  spaced.options = {"-DV=7", " -arch=compute_90"};
  BOOST_CHECK_THROW(cache.get(spaced, k_arch), kjit::OptionError);
  BOOST_CHECK_THROW(kjit::compile(spaced, k_arch), kjit::OptionError);
}

// -std= and --std= are one option to NVRTC (the same binaries, -G too): one key, not a compile
// more for the other spelling.
BOOST_AUTO_TEST_CASE(std_with_one_or_two_dashes_is_one_key)
{
  kjit::Cache cache(config);
  const kjit::Program one{"k.cu", k_kernel, {}, {"-DV=7", "-std=c++17"}, {}};
  kjit::Program two = one;
  two.options[1] = "--std=c++17";
  BOOST_TEST(cache.prepare(one, k_arch).key() == cache.prepare(two, k_arch).key());
  two.options[1] = "--std=c++14";
  BOOST_TEST(cache.prepare(one, k_arch).key() != cache.prepare(two, k_arch).key());
}

// NVRTC takes an in-memory header named as a pre-include before any file (plain NVRTC: the
// in-memory one, with pre.h in the working directory). kjit gave NVRTC the path of the working
// directory's file, and the binary was that file's.
BOOST_AUTO_TEST_CASE(a_pre_include_named_as_an_in_memory_header_is_the_in_memory_header)
{
  const std::string d = tmp.path() + "/memory";
  put(d + "/pre.h", "#define V 1\n");
  put(d + "/inc/pre.h", "#define V 2\n");
  settle();
  InDir in(d);
  for (const std::vector<std::string>& options :
       std::vector<std::vector<std::string>>{{"-include=pre.h"}, {"-Iinc", "--pre-include", "pre.h"}}) {
    const kjit::Program program{"k.cu", k_kernel, {{"pre.h", "#define V 3\n"}}, options, {}};
    BOOST_TEST(plain(config, program) == "3");
    kjit::Cache cache(config);
    BOOST_TEST(cached(cache, program) == "3");
    kjit::Cache fresh(config);
    BOOST_TEST(cached(fresh, program) == "3");
  }
}

// NVRTC reads "-D=X", "-U=X" and "-I=X" as "-DX", "-UX" and "-IX": one '=' after the short flag is
// dropped ("-I==inc" is the folder "=inc"; measured, NVRTC 13.0). kjit refused "-D=V=5" (an
// OptionError: "names no macro") and keyed "-I=inc" by the folder "=inc" (another key than
// "-Iinc", whose binary is the same).
BOOST_AUTO_TEST_CASE(a_short_option_with_an_equals_sign_is_read_as_nvrtc_reads_it)
{
  const std::string d = tmp.path() + "/equals";
  put(d + "/inc/x.h", "#define V 1\n");
  put(d + "/=inc/x.h", "#define V 2\n");
  settle();
  InDir in(d);
  const std::string include = "#include <x.h>\n" + std::string(k_kernel);
  const std::string maybe = "#ifndef V\n#define V 9\n#endif\n" + std::string(k_kernel);
  struct Case {
    std::vector<std::string> options;
    std::string source;
    std::vector<std::string> same_as;
    std::string value;
  };
  int n = 0;
  for (const Case& c : std::vector<Case>{{{"-D=V=5"}, k_kernel, {"-DV=5"}, "5"},
                                         {{"-D=V"}, k_kernel, {"-DV"}, "1"},
                                         {{"-DV=5", "-U=V"}, maybe, {"-DV=5", "-UV"}, "9"},
                                         {{"-I=inc"}, include, {"-Iinc"}, "1"},
                                         {{"-I==inc"}, include, {"-I", "=inc"}, "2"}}) {
    config.cache_dir = tmp.path() + "/cache" + std::to_string(++n);
    kjit::Cache cache(config);
    const kjit::Program program{"k.cu", c.source, {}, c.options, {}};
    const kjit::Program same{"k.cu", c.source, {}, c.same_as, {}};
    BOOST_TEST(plain(config, program) == c.value);
    BOOST_TEST(cached(cache, program) == c.value);
    BOOST_TEST(cached(cache, same) == c.value);
    try {
      BOOST_TEST(cache.prepare(program, k_arch).key() == cache.prepare(same, k_arch).key());
    } catch (const kjit::Error& e) {
      BOOST_TEST(e.what() == "no error");
    }
  }
}

// A value given apart after -Xptxas (or --ptxas-options, -Xnvvm) goes to ptxas (NVVM) as it is:
// "-Xptxas" "-D x" is ptxas's option "-D x" (ptxas: Unknown option 'D x'). kjit split it like an
// option "-D x", and NVRTC was given "-Xptxas" "-D" "x": another error ("unrecognized option x").
BOOST_AUTO_TEST_CASE(a_value_after_xptxas_is_not_split)
{
  const kjit::Arch real = kjit::Arch::parse("sm_80");
  for (const char* flag : {"-Xptxas", "--ptxas-options"}) {
    const kjit::Program program{"k.cu", "extern \"C\" __global__ void k(int* o) { *o = 1; }\n", {}, {flag, "-D x"}, {}};
    try {
      kjit::rtc::compile(config, program, real);
      BOOST_TEST(false, "no error");
    } catch (const kjit::OptionError& e) {
      BOOST_TEST(std::string(e.what()).find("Unknown option 'D x'") != std::string::npos, e.what());
    }
  }
}

// Two spellings of one NVRTC option (its short and long names: NVRTC's messages name them as one,
// "--ftz (-ftz)", and the binaries are the same byte for byte) are one key: a compile less. Other
// values stay other keys.
BOOST_AUTO_TEST_CASE(short_and_long_spellings_of_one_option_share_a_key)
{
  const kjit::Arch real = kjit::Arch::parse("sm_80");
  kjit::Cache cache(config);
  const kjit::Program base{"k.cu", "extern \"C\" __global__ void k(float* o) { *o = *o / 3.0f; }\n", {}, {}, {}};
  const auto key = [&](const std::vector<std::string>& options) {
    kjit::Program program = base;
    program.options = options;
    return cache.prepare(program, real).key();
  };
  const std::vector<std::pair<std::vector<std::string>, std::vector<std::string>>> same{
    {{"-ftz=true"}, {"--ftz=true"}},
    {{"-prec-div=false"}, {"--prec-div=false"}},
    {{"-prec-sqrt=false"}, {"--prec-sqrt=false"}},
    {{"-fmad=false"}, {"--fmad=false"}},
    {{"-use_fast_math"}, {"--use_fast_math"}},
    {{"-maxrregcount=24"}, {"--maxrregcount=24"}},
    {{"-maxrregcount", "24"}, {"--maxrregcount=24"}},
    {{"-Xptxas=-O1"}, {"--ptxas-options=-O1"}},
    {{"-Xptxas", "-O1"}, {"--ptxas-options=-O1"}},
    {{"--ptxas-options", "-O1"}, {"--ptxas-options=-O1"}},
    {{"-rdc=true"}, {"--relocatable-device-code=true"}},
    {{"-dc"}, {"--device-c"}},
    {{"-dw"}, {"--device-w"}},
    {{"-ewp"}, {"--extensible-whole-program"}},
    {{"-jtd=0"}, {"--jump-table-density=0"}},
    {{"-modify-stack-limit=false"}, {"--modify-stack-limit=false"}},
    {{"-device-stack-protector=true"}, {"--device-stack-protector=true"}},
    {{"-default-device"}, {"--device-as-default-execution-space"}},
    {{"-restrict"}, {"--restrict"}},
    {{"-w"}, {"--disable-warnings"}},
    {{"-Ofc=max"}, {"--Ofast-compile=max"}},
    {{"-extra-device-vectorization"}, {"--extra-device-vectorization"}},
    {{"-device-int128"}, {"--device-int128"}},
    {{"-no-source-include"}, {"--no-source-include"}},
    {{"-dlto"}, {"--dlink-time-opt"}},
  };
  for (const auto& [one, two] : same) {
    BOOST_TEST(key(one) == key(two), one.front() + " and " + two.front());
  }
  BOOST_TEST(key({"-ftz=true"}) != key({"-ftz=false"}));
  BOOST_TEST(key({"-maxrregcount=24"}) != key({"--maxrregcount=32"}));
  BOOST_TEST(key({"-Xptxas=-O1"}) != key({"-Xptxas=-O2"}));
  BOOST_TEST(key({"-w"}) != key({"-use_fast_math"}));
  // The spellings' binaries are the same (the measurement the shared key rests on).
  for (const auto& [one, two] : std::vector<std::pair<std::string, std::string>>{
         {"-ftz=true", "--ftz=true"}, {"-prec-div=false", "--prec-div=false"}, {"-use_fast_math", "--use_fast_math"},
         {"-maxrregcount=24", "--maxrregcount=24"}, {"-Xptxas=-O1", "--ptxas-options=-O1"}}) {
    kjit::Program a = base;
    a.options = {one};
    kjit::Program b = base;
    b.options = {two};
    const kjit::Binary x = kjit::rtc::compile(config, a, real);
    const kjit::Binary y = kjit::rtc::compile(config, b, real);
    BOOST_TEST((x.ptx == y.ptx && x.cubin == y.cubin), one);
  }
}

// The value given apart after -Xnvvm goes to NVVM as it is, and NVVM knows no long names: it
// takes "-w", "-restrict" and "--device-c" but refuses "--disable-warnings", "--restrict" and
// "-dc" (measured, NVRTC 13.0). The key read that value as an NVRTC option and named it by its
// long name, so "-Xnvvm" "-w" and "-Xnvvm" "--disable-warnings" were one key: the binary compiled
// for one was served for the other, which NVRTC refuses (an OptionError), and the reverse.
BOOST_AUTO_TEST_CASE(a_value_after_xnvvm_is_keyed_as_nvvm_reads_it)
{
  const kjit::Program base{"k.cu", "extern \"C\" __global__ void k(int* o) { *o = V; }\n", {}, {}, {}};
  for (const auto& [taken, refused] : std::vector<std::pair<std::string, std::string>>{
         {"-w", "--disable-warnings"}, {"-restrict", "--restrict"}, {"--device-c", "-dc"}}) {
    kjit::Program good = base;
    good.options = {"-DV=4", "-Xnvvm", taken};
    kjit::Program bad = base;
    bad.options = {"-DV=4", "-Xnvvm", refused};
    BOOST_TEST(plain(config, good) == "4", taken);
    BOOST_TEST(plain(config, bad).rfind("error: ", 0) == 0, refused);
    {
      kjit::Cache cache(config);
      BOOST_TEST(cached(cache, good) == "4", taken);
      BOOST_TEST(cached(cache, bad) == plain(config, bad), refused + " after " + taken);
    }
    kjit::Cache fresh(config);
    BOOST_TEST(cached(fresh, bad) == plain(config, bad), refused + " after " + taken + ", a new Cache");
    BOOST_TEST(fresh.prepare(good, k_arch).key() != fresh.prepare(bad, k_arch).key(), taken + " and " + refused);
  }
}

// NVRTC reads an option up to its first NUL byte: "-lineinfo\0" is -lineinfo to it, but not to
// kjit, which looked the program up by its raw inputs without the working directory, and served
// the binary made in another folder (its .file line named that folder). An option with a NUL
// byte is an OptionError, as a source with one is refused.
BOOST_AUTO_TEST_CASE(an_option_with_a_nul_byte_is_an_option_error)
{
  kjit::Cache cache(config);
  for (const std::string& option : {std::string("-lineinfo\0", 10), std::string("-G\0x", 4), std::string("-DV=1\0", 6),
                                    std::string("\0-DV=1", 6)}) {
    const kjit::Program program{"k.cu", "#define V 2\n" + std::string(k_kernel), {}, {"-DW=1", option}, {}};
    BOOST_CHECK_THROW(cache.get(program, k_arch), kjit::OptionError);
    BOOST_CHECK_THROW(cache.prepare(program, k_arch), kjit::OptionError);
    BOOST_CHECK_THROW(kjit::compile(program, k_arch), kjit::OptionError);
  }
}

// NVRTC puts each name expression on a line of a file it compiles with the program
// ("#pragma nv_mangled_name <expression>"): a line break in one starts a line of its own, and
// "k<1>\n#include \"/abs/x.h\"" compiled x.h into the binary, a file no key held: an edit of it
// was served the old binary. A name expression with a line break (or a NUL byte) is an error.
BOOST_AUTO_TEST_CASE(a_name_expression_with_a_line_break_is_an_error)
{
  const std::string header = tmp.path() + "/injected/x.h";
  put(header, "extern \"C\" __global__ void injected(int* o) { *o = 4242; }\n");
  settle();
  kjit::Cache cache(config);
  for (const std::string& expression : {"k<1>\n#include \"" + header + "\"\n", std::string("k<1>\0x", 6)}) {
    const kjit::Program program{"k.cu", "template <int N> __global__ void k(int* o) { *o = N; }\n", {}, {}, {expression}};
    for (int round = 0; round < 2; ++round) {
      try {
        cache.get(program, k_arch);
        BOOST_ERROR("no error");
      } catch (const kjit::CompileError& e) {
        BOOST_ERROR(e.what());
      } catch (const kjit::Error&) {
      }
      try {
        kjit::compile(program, k_arch);
        BOOST_ERROR("no error");
      } catch (const kjit::CompileError& e) {
        BOOST_ERROR(e.what());
      } catch (const kjit::Error&) {
      }
    }
  }
}

// A name expression is compiled with the program (NVRTC writes it into a file of its own): a
// __has_include there probes the disk, and __TIME__ there is the time of the compile. Before, name
// expressions were not looked at: the program counted as one naming no header and using no time,
// and was found by its raw inputs. The lowered name of k<__has_include("x.h")> compiled before
// x.h existed was served after it appeared, and k<__TIME__[7]> kept the first compile's second.
BOOST_AUTO_TEST_CASE(a_name_expression_that_probes_a_file_or_uses_the_time_is_not_served_stale)
{
  const std::string d = tmp.path() + "/named";
  put(d + "/k.cu", "template <int N> __global__ void k(int* o) { *o = N; }\n");
  settle();
  InDir in(d);
  const kjit::Program probe{"k.cu", read_text(d + "/k.cu"), {}, {}, {"k<__has_include(\"x.h\")>"}};
  const auto lowered = [&](kjit::Cache& cache) { return cache.get(probe, k_arch)->lowered_names.at(0).second; };
  const auto plain = [&] { return kjit::compile(probe, k_arch).lowered_names.at(0).second; };
  {
    kjit::Cache cache(config);
    BOOST_TEST(lowered(cache) == plain());
    BOOST_TEST(plain() == "_Z1kILi0EEvPi");
    put(d + "/x.h", "\n");
    settle();
    BOOST_TEST(lowered(cache) == plain());
    BOOST_TEST(plain() == "_Z1kILi1EEvPi");
  }
  kjit::Cache cache(config);
  BOOST_TEST(lowered(cache) == plain());

  const kjit::Program timed{"t.cu", read_text(d + "/k.cu"), {}, {}, {"k<__TIME__[7]>"}};
  kjit::Cache timing(config);
  timing.get(timed, k_arch);
  timing.get(timed, k_arch);
  BOOST_TEST(timing.stats().compiles == 2u);  // compiled each time, as with __TIME__ in the source
  BOOST_TEST(timing.stats().disk_hits + timing.stats().memory_hits == 0u);
}

// -Xcudafe passes options to NVRTC's front end unseen: "-Xcudafe=-I<dir>" is an include folder
// and "-Xcudafe=--preinclude=<file>" a pre-include kjit never knew of, so an edit of the header
// there was served the old binary. It is an OptionError (before any lookup); as the value of an
// option before ("-I" "-Xcudafe": the folder "-Xcudafe") it is no option.
BOOST_AUTO_TEST_CASE(front_end_options_are_an_option_error)
{
  const std::string d = tmp.path() + "/cudafe";
  put(d + "/inc/h.h", "#define V 1\n");
  put(d + "/-Xcudafe/h.h", "#define V 2\n");
  settle();
  InDir in(d);
  kjit::Cache cache(config);
  for (const std::vector<std::string>& options : std::vector<std::vector<std::string>>{
         {"-Xcudafe=-I" + d + "/inc"}, {"-Xcudafe", "--preinclude=" + d + "/inc/h.h"}, {" -Xcudafe=-I" + d + "/inc"}}) {
    const kjit::Program program{"k.cu", "#include \"h.h\"\n" + std::string(k_kernel), {}, options, {}};
    BOOST_CHECK_THROW(cache.get(program, k_arch), kjit::OptionError);
    BOOST_CHECK_THROW(kjit::compile(program, k_arch), kjit::OptionError);
  }
  const kjit::Program program{"k.cu", "#include <h.h>\n" + std::string(k_kernel), {}, {"-I", "-Xcudafe"}, {}};
  BOOST_TEST(cached(cache, program) == "2");
}

// NVRTC 13.0's automatic PCH (-pch) is used as made after the headers in it change (measured: an
// in-memory header with other contents, a disk header edited to another size a second later: the
// next compile in that process still gave the old value). So kjit gives NVRTC -pch only with a PCH
// folder per set of options and in-memory headers (its batch workers), and drops a program's own
// -pch otherwise (rtc::without_unfoldered_pch; the binaries are the same).

// A program asking for -pch gets the headers it has now: in-memory ones with other contents in turn
// (each compiled in this process, stored under its own key), and a disk header edited in turn.
// (Before, the second and third in-memory contents got the first's value, and were stored so.)
BOOST_AUTO_TEST_CASE(a_program_asking_for_nvrtc_s_pch_gets_the_headers_it_has_now)
{
  for (int value = 1; value <= 3; ++value) {
    kjit::Program asks{"k.cu", "#include \"h.cuh\"\n__global__ void k(int* p) { *p = V; }\n", {}, {}, {}};
    asks.headers = {{"h.cuh", "#define V " + std::to_string(value * 1111) + "\n"}};
    asks.options = {"--pch"};
    kjit::Cache fresh(config);
    BOOST_TEST(cached(fresh, asks) == std::to_string(value * 1111));
    kjit::Cache again(config);
    BOOST_TEST(cached(again, asks) == std::to_string(value * 1111));  // as stored
  }
  const std::string include = tmp.path() + "/inc";
  kjit::Program asks{"k.cu", "#include \"v.h\"\n__global__ void k(int* p) { *p = V; }\n", {}, {}, {}};
  asks.options = {"-I" + include, "-pch"};
  for (int value = 1; value <= 3; ++value) {
    put(include + "/v.h", "#define V " + std::to_string(value * 1111) + std::string(value, ' ') + "\n");
    settle();
    kjit::Cache fresh(config);
    BOOST_TEST(cached(fresh, asks) == std::to_string(value * 1111));
  }
}

// A batch's worker gives the items of two PCH groups (other in-memory header contents, the same
// program name and include line) each its own headers, and a header on disk edited between two
// items of one group (from the progress callback) is read by the items after it. (Before, the
// second group's items got the first group's value, and were stored so.)
BOOST_AUTO_TEST_CASE(a_batch_s_pch_holds_each_group_s_headers_as_they_are)
{
  std::vector<kjit::BatchItem> items;
  for (int group = 1; group <= 2; ++group) {
    for (int i = 0; i < 2; ++i) {
      kjit::Program program{"k.cu", "#include \"h.cuh\"\n__global__ void k" + std::to_string(i) + "(int* p) { *p = V; }\n", {}, {}, {}};
      program.headers = {{"h.cuh", "#define V " + std::to_string(group * 1111) + "\n"}};
      items.push_back({program, k_arch});
    }
  }
  const std::string include = tmp.path() + "/inc";
  put(include + "/v.h", "#define V 3333\n");
  settle();
  for (int i = 0; i < 3; ++i) {
    kjit::Program program{"k.cu", "#include \"v.h\"\n__global__ void k" + std::to_string(i) + "(int* p) { *p = V; }\n", {}, {}, {}};
    program.options = {"-I" + include};
    items.push_back({program, k_arch});
  }
  kjit::Cache cache(config);
  kjit::BatchOptions options;
  options.jobs = 1;  // one worker, the items in the plan's order: the groups one after the other
  options.worker_path = helper("KJIT_TEST_WORKER");
  options.progress = [&](std::size_t done, std::size_t) {
    if (done == 1) {  // the plan takes the disk header's group first (its options sort first)
      put(include + "/v.h", "#define V 4444 \n");
      settle();
    }
  };
  const auto results = cache.get_many(items, options);
  for (std::size_t i = 0; i < items.size(); ++i) {
    BOOST_TEST_REQUIRE(results[i].binary, results[i].message);
  }
  BOOST_TEST(value_in(results[0].binary->ptx) == "1111");
  BOOST_TEST(value_in(results[1].binary->ptx) == "1111");
  BOOST_TEST(value_in(results[2].binary->ptx) == "2222");
  BOOST_TEST(value_in(results[3].binary->ptx) == "2222");
  kjit::Cache fresh(config);
  for (std::size_t i = 0; i < 4; ++i) {
    BOOST_TEST(cached(fresh, items[i].program) == (i < 2 ? "1111" : "2222"), "item " << i);
  }
  int before_the_edit = 0;
  for (std::size_t i = 4; i < items.size(); ++i) {
    before_the_edit += value_in(results[i].binary->ptx) == "3333" ? 1 : 0;
    BOOST_TEST(cached(fresh, items[i].program) == "4444", "item " << i);
  }
  BOOST_TEST(before_the_edit <= 1);
}

BOOST_AUTO_TEST_SUITE_END()
