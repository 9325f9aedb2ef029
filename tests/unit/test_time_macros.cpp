// __TIME__, __TIMESTAMP__ and __DATE__ (issue 22): a program using them, in its source, an
// in-memory header or a disk header, is compiled each time and never cached, as ccache does.
#include <boost/test/unit_test.hpp>

#include "fixture.hpp"

#include "rtc/compiler.hpp"

#include <chrono>
#include <thread>

using namespace kjit::test;

namespace {

const kjit::Arch k_sm80 = kjit::Arch::parse("sm_80");

// A kernel writing the first 8 characters of `macro` (a string: "hh:mm:ss" for __TIME__).
std::string writes(const std::string& macro)
{
  return "extern \"C\" __global__ void k(char* o) { const char* t = " + macro +
         "; for (int i = 0; i < 8; ++i) o[i] = t[i]; }\n";
}

// `program` compiled through `cache` twice, 1.1 s apart: both compiled (no hit, the second's PTX
// holds the later time), then once more equal to an uncached compile made right after it
// (tried again where the two straddle a second).
void compiled_each_time(kjit::Cache& cache, const kjit::Config& config, const kjit::Program& program)
{
  const kjit::CacheStats before = cache.stats();
  const auto first = cache.get(program, k_sm80);
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  const auto second = cache.get(program, k_sm80);
  BOOST_TEST(cache.stats().compiles == before.compiles + 2, program.name);
  BOOST_TEST(cache.stats().memory_hits + cache.stats().disk_hits == before.memory_hits + before.disk_hits);
  BOOST_TEST(second->ptx != first->ptx, program.name);
  bool same = false;
  for (int attempt = 0; attempt < 3 && !same; ++attempt) {
    const auto now = cache.get(program, k_sm80);
    same = now->ptx == kjit::rtc::compile(config, program, k_sm80).ptx;
  }
  BOOST_TEST(same, program.name << ": as an uncached compile now");
}

} // namespace

BOOST_FIXTURE_TEST_SUITE(time_macros, CacheFixture)

BOOST_AUTO_TEST_CASE(time_in_the_source_is_compiled_each_time)
{
  kjit::Cache cache(config);
  compiled_each_time(cache, config, kjit::Program{"t.cu", writes("__TIME__"), {}, {}, {}});
  // Nor found by a later process (the store holds nothing for it).
  kjit::Cache fresh(config);
  static_cast<void>(fresh.get(kjit::Program{"t.cu", writes("__TIME__"), {}, {}, {}}, k_sm80));
  BOOST_TEST(fresh.stats().compiles == 1u);
  BOOST_TEST(fresh.stats().disk_hits == 0u);
}

BOOST_AUTO_TEST_CASE(time_in_a_disk_header_is_compiled_each_time)
{
  const std::string d = tmp.path() + "/disk";
  put(d + "/t.h", "#define STAMP __TIME__\n");
  put(d + "/k.cu", "#include \"t.h\"\n" + writes("STAMP"));
  settle();
  kjit::Cache cache(config);
  compiled_each_time(cache, config, kjit::program_from_file(d + "/k.cu"));
}

BOOST_AUTO_TEST_CASE(time_in_an_in_memory_header_is_compiled_each_time)
{
  kjit::Cache cache(config);
  compiled_each_time(cache, config,
                     kjit::Program{"m.cu", "#include \"t.h\"\n" + writes("STAMP"), {{"t.h", "#define STAMP __TIME__\n"}}, {}, {}});
}

BOOST_AUTO_TEST_CASE(date_and_timestamp_are_not_cached_either)
{
  kjit::Cache cache(config);
  // NVRTC defines no __TIMESTAMP__ (so far): a program naming it is not cached all the same.
  const std::string stamp = "#ifdef __TIMESTAMP__\n#define S __TIMESTAMP__\n#else\n#define S \"no stamp\"\n#endif\n";
  for (const std::string& source : {writes("__DATE__"), stamp + writes("S")}) {
    const kjit::Program program{"d.cu", source, {}, {}, {}};
    static_cast<void>(cache.get(program, k_sm80));
    static_cast<void>(cache.get(program, k_sm80));
  }
  BOOST_TEST(cache.stats().compiles == 4u);
  BOOST_TEST(cache.stats().memory_hits == 0u);
}

// A -D value is program text too: -DNOW=__TIME__ puts the time of each compile into the binary.
// Before, options were not looked at: the program was found by its raw inputs and the first
// compile's time was served (a second later, "49" for "50").
BOOST_AUTO_TEST_CASE(time_in_a_define_is_compiled_each_time)
{
  kjit::Cache cache(config);
  const std::vector<std::vector<std::string>> spellings{
    {"-DNOW=__TIME__"}, {"-D", "NOW=__TIME__"}, {"--define-macro=NOW=__DATE__"}, {"--define-macro", "NOW=__TIME__"}};
  const std::string source = "#ifndef NOW\n#define NOW \"unset   \"\n#endif\n" + writes("NOW");
  for (const auto& options : spellings) {
    const kjit::Program program{"n.cu", source, {}, options, {}};
    static_cast<void>(cache.get(program, k_sm80));
    static_cast<void>(cache.get(program, k_sm80));
  }
  BOOST_TEST(cache.stats().compiles == 8u);
  BOOST_TEST(cache.stats().memory_hits + cache.stats().disk_hits == 0u);
  kjit::Cache fresh(config);
  static_cast<void>(fresh.get(kjit::Program{"n.cu", source, {}, {"-DNOW=__TIME__"}, {}}, k_sm80));
  BOOST_TEST(fresh.stats().compiles == 1u);  // nor found by a later process
}

BOOST_AUTO_TEST_CASE(only_whole_identifiers_count)
{
  kjit::Cache cache(config);
  const std::string defines = "#define MY__TIME__X \"12:34:56\"\n#define __TIME__X \"12:34:56\"\n";
  const kjit::Program program{"w.cu", defines + writes("MY__TIME__X") + "// __TIME__X\n", {}, {}, {}};
  static_cast<void>(cache.get(program, k_sm80));
  static_cast<void>(cache.get(program, k_sm80));
  BOOST_TEST(cache.stats().compiles == 1u);
  BOOST_TEST(cache.stats().memory_hits == 1u);
  BOOST_TEST(!kjit::Cache(config).prepare(program, k_sm80).provisional());
}

// Issue 38: the words are looked for as the preprocessor sees the text: a backslash-newline
// splice, or a trigraph splice (??/ before a newline, in the standards that have trigraphs), inside
// __TIME__ served the first compile's time from the cache.
BOOST_AUTO_TEST_CASE(time_spelled_across_a_splice_is_compiled_each_time)
{
  kjit::Cache cache(config);
  compiled_each_time(cache, config, kjit::Program{"splice.cu", writes("__TI\\\nME__"), {}, {}, {}});
  compiled_each_time(cache, config, kjit::Program{"trigraph.cu", writes("__TI??/\nME__"), {}, {"-std=c++14"}, {}});
}

// Nor a time formed by a token paste (`CAT(__TI, ME__)`), whose pieces may be in another file.
BOOST_AUTO_TEST_CASE(time_formed_by_a_token_paste_is_compiled_each_time)
{
  kjit::Cache cache(config);
  const std::string cat = "#define CAT_(a, b) a##b\n#define CAT(a, b) CAT_(a, b)\n";
  compiled_each_time(cache, config, kjit::Program{"pasted.cu", cat + writes("CAT(__TI, ME__)"), {}, {}, {}});
  compiled_each_time(cache, config, kjit::Program{"ending.cu", cat + writes("CAT(_, _TIME__)"), {}, {}, {}});
  compiled_each_time(cache, config,
                     kjit::Program{"pasted_header.cu", "#include \"cat.h\"\n" + writes("CAT(__TI, ME__)"), {{"cat.h", cat}}, {}, {}});
}

BOOST_AUTO_TEST_SUITE_END()
