// Typed CompileOptions → the canonical option list → the key and the compile; Program's named
// construction and Program::from_file keeping the file's folder for quoted includes.
#include <boost/test/unit_test.hpp>

#include "fixture.hpp"

using namespace kjit::test;

BOOST_FIXTURE_TEST_SUITE(program_options, CacheFixture)

BOOST_AUTO_TEST_CASE(typed_options_render_in_a_fixed_order)
{
  kjit::CompileOptions o;
  o.extra = {"--extra-device-vectorization"};
  o.debug = true;
  o.line_info = true;
  o.max_registers = 40;
  o.fmad = false;
  o.ftz = true;
  o.fast_math = true;
  o.pre_includes = {"pre.h"};
  o.include_dirs = {"include", "/opt/inc"};
  o.undefines = {"OLD"};
  o.defines = {{"N", "4"}, {"FLAG", ""}};
  o.standard = "c++17";
  const std::vector<std::string> expected{"--std=c++17",   "-DN=4",       "-DFLAG",       "-UOLD",
                                          "-Iinclude",     "-I/opt/inc",  "--pre-include=pre.h",
                                          "--use_fast_math", "--ftz=true", "--fmad=false", "--maxrregcount=40",
                                          "-lineinfo",     "-G",          "--extra-device-vectorization"};
  BOOST_TEST(o.render() == expected, boost::test_tools::per_element());
  BOOST_TEST(kjit::CompileOptions{}.render().empty());
}

BOOST_AUTO_TEST_CASE(malformed_typed_options_are_option_errors)
{
  kjit::CompileOptions o;
  o.defines = {{"", "1"}};
  BOOST_CHECK_THROW(o.render(), kjit::OptionError);
  o.defines = {{"N=4", ""}};
  BOOST_CHECK_THROW(o.render(), kjit::OptionError);
  o.defines = {{"1N", ""}};
  BOOST_CHECK_THROW(o.render(), kjit::OptionError);
  o.defines.clear();
  o.undefines = {"a b"};
  BOOST_CHECK_THROW(o.render(), kjit::OptionError);
  o.undefines.clear();
  o.include_dirs = {""};
  BOOST_CHECK_THROW(o.render(), kjit::OptionError);
  o.include_dirs.clear();
  o.max_registers = -1;
  BOOST_CHECK_THROW(o.render(), kjit::OptionError);
  o.max_registers = 0;
  o.pre_includes = {""};
  BOOST_CHECK_THROW(o.render(), kjit::OptionError);
}

BOOST_AUTO_TEST_CASE(typed_options_give_the_raw_options_key_and_reach_the_compile)
{
  const char* source = "extern \"C\" __global__ void k(float* p) { p[0] = sinf(p[1]) * VALUE; }\n";
  kjit::CompileOptions typed;
  typed.defines = {{"VALUE", "31.5f"}};
  typed.fast_math = true;
  typed.line_info = true;
  const kjit::Program built = kjit::Program::from_source("typed.cu", source).with(typed);
  const kjit::Program raw{"typed.cu", source, {}, {"-DVALUE=31.5f", "--use_fast_math", "-lineinfo"}, {}};
  BOOST_TEST(built.options == raw.options, boost::test_tools::per_element());
  kjit::Cache cache(config);
  const kjit::Arch arch = kjit::Arch::parse("sm_90");
  BOOST_TEST(cache.prepare(built, arch).key() == cache.prepare(raw, arch).key());
  const auto binary = cache.get(built, arch);
  BOOST_TEST(binary->ptx.find("0f41FC0000") != std::string::npos);  // 31.5f: the define reached NVRTC
  BOOST_TEST(binary->ptx.find("sin.approx") != std::string::npos);  // --use_fast_math did
  BOOST_TEST(binary->ptx.find(".loc") != std::string::npos);        // -lineinfo did
  kjit::Program plain = kjit::Program::from_source("typed.cu", source);
  plain.option("-DVALUE=31.5f");
  BOOST_TEST(cache.get(plain, arch)->ptx.find("sin.approx") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(named_construction_builds_the_same_program)
{
  const kjit::Program built = kjit::Program::from_source("named.cu", "int x;")
                                .option("-DA=1")
                                .header("h.h", "int h;")
                                .header("h.h", "int h2;")
                                .name_expression("k<int>");
  const kjit::Program positional{"named.cu", "int x;", {{"h.h", "int h2;"}}, {"-DA=1"}, {"k<int>"}};
  BOOST_TEST(built.name == positional.name);
  BOOST_TEST(built.source == positional.source);
  BOOST_TEST((built.headers == positional.headers));
  BOOST_TEST(built.options == positional.options, boost::test_tools::per_element());
  BOOST_TEST(built.name_expressions == positional.name_expressions, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(from_file_keeps_the_files_folder_for_quoted_includes)
{
  const std::string folder = tmp.path() + "/project/kernels";
  std::string output;
  BOOST_TEST_REQUIRE(run("mkdir -p '" + folder + "'", output) == 0);
  write_text(folder + "/params.h", "#define SCALE 7\n");
  write_text(folder + "/scaled.cu", "#include \"params.h\"\nextern \"C\" __global__ void k(int* p) { *p = SCALE * 1000003; }\n");
  const kjit::Program program = kjit::Program::from_file(folder + "/scaled.cu");
  BOOST_TEST(program.name == folder + "/scaled.cu");
  kjit::Cache cache(config);
  BOOST_TEST(cache.get(program, kjit::Arch::parse("compute_90"))->ptx.find("7000021") != std::string::npos);
  BOOST_CHECK_THROW(kjit::Program::from_file(folder), kjit::Error);
}

// A typed include folder or pre-include is the one named: "-I" + "=inc" is "-I=inc", which NVRTC
// reads as the folder inc, and "-I" + " inc" is "-I inc", the folder inc too. render() gave those
// options, and the compile read inc's header instead of =inc's or " inc"'s. A name ending in white
// space (NVRTC trims every option's ends) is an OptionError: no option names it.
BOOST_AUTO_TEST_CASE(typed_include_folders_and_pre_includes_are_the_ones_named)
{
  const std::string d = tmp.path() + "/typed";
  put(d + "/inc/x.h", "#define V 1\n");
  put(d + "/=inc/x.h", "#define V 2\n");
  put(d + "/ inc/x.h", "#define V 3\n");
  put(d + "/p.h", "#define V 4\n");
  put(d + "/=p.h", "#define V 5\n");
  put(d + "/ p.h", "#define V 6\n");
  settle();
  InDir in(d);
  const auto value_of = [](const std::string& ptx) {
    const char* marker = "mov.u32 \t%r1, ";
    const auto at = ptx.find(marker);
    return at == std::string::npos ? std::string("?") : ptx.substr(at + 14, ptx.find(';', at) - at - 14);
  };
  const kjit::Arch arch = kjit::Arch::parse("compute_80");
  const std::string kernel = "extern \"C\" __global__ void k(int* o) { *o = V; }\n";
  kjit::Cache cache(config);
  for (const auto& [folder, value] : std::vector<std::pair<std::string, std::string>>{
         {"inc", "1"}, {"=inc", "2"}, {" inc", "3"}}) {
    kjit::CompileOptions typed;
    typed.include_dirs = {folder};
    const kjit::Program program = kjit::Program::from_source("k.cu", "#include <x.h>\n" + kernel).with(typed);
    BOOST_TEST(value_of(kjit::compile(program, arch).ptx) == value, folder);
    BOOST_TEST(value_of(cache.get(program, arch)->ptx) == value, folder);
  }
  for (const auto& [header, value] : std::vector<std::pair<std::string, std::string>>{
         {"p.h", "4"}, {"=p.h", "5"}, {" p.h", "6"}}) {
    kjit::CompileOptions typed;
    typed.pre_includes = {header};
    const kjit::Program program = kjit::Program::from_source("k.cu", kernel).with(typed);
    BOOST_TEST(value_of(kjit::compile(program, arch).ptx) == value, header);
    BOOST_TEST(value_of(cache.get(program, arch)->ptx) == value, header);
  }
  kjit::CompileOptions o;
  for (const char* name : {"inc ", "inc\t", " "}) {
    o.include_dirs = {name};
    BOOST_CHECK_THROW(o.render(), kjit::OptionError);
  }
  o.include_dirs.clear();
  for (const char* name : {"p.h ", "p.h\n", "\t"}) {
    o.pre_includes = {name};
    BOOST_CHECK_THROW(o.render(), kjit::OptionError);
  }
}

BOOST_AUTO_TEST_SUITE_END()
