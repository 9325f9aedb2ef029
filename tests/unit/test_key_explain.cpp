// kjit explain after each edit of issue 22's table: it names the header or the context that changed.
#include <boost/test/unit_test.hpp>

#include "fixture.hpp"

#include <functional>
#include <sys/stat.h>

using namespace kjit::test;

namespace {

const kjit::Arch k_arch = kjit::Arch::parse("sm_80");
const char* k_kernel = "extern \"C\" __global__ void k(int* o) { *o = V; }\n";

kjit::Program program_of(const std::string& src, const std::vector<std::string>& options)
{
  kjit::Program program = kjit::program_from_file(src);
  program.options = options;
  return program;
}

// Compiles `src`, applies `edit`, and returns what explain says then (a hit before the edit).
std::vector<std::string> explained(kjit::Cache& cache, const std::string& src, const std::vector<std::string>& options,
                                   const std::function<void()>& edit)
{
  cache.get(program_of(src, options), k_arch);
  BOOST_TEST(cache.explain(program_of(src, options), k_arch).hit);
  edit();
  settle();
  const kjit::MissExplanation why = cache.explain(program_of(src, options), k_arch);
  BOOST_TEST(!why.hit);
  return why.differences;
}

bool mentions(const std::vector<std::string>& lines, const std::string& text)
{
  for (const auto& line : lines) {
    BOOST_TEST_MESSAGE("explain: " << line);
    if (line.find(text) != std::string::npos) {
      return true;
    }
  }
  return false;
}

} // namespace

BOOST_FIXTURE_TEST_SUITE(key_explain, CacheFixture)

BOOST_AUTO_TEST_CASE(explain_names_the_header_or_context_of_each_row)
{
  const std::string d = tmp.path();
  kjit::Cache cache(config);
  // Row 1: the same source in another folder (its own val.h): another resolution context.
  put(d + "/a/k.cu", std::string("#include \"val.h\"\n") + k_kernel);
  put(d + "/a/val.h", "#define V 11\n");
  put(d + "/b/k.cu", read_text(d + "/a/k.cu"));
  put(d + "/b/val.h", "#define V 22\n");
  settle();
  const auto row1 = explained(cache, d + "/a/k.cu", {}, [&] { put(d + "/a/val.h", "#define V 12\n"); });
  BOOST_TEST(mentions(row1, "include val.h (" + d + "/a/val.h) changed"), row1.size());
  const auto other = cache.explain(program_of(d + "/b/k.cu", {}), k_arch);
  BOOST_TEST(!other.hit);
  BOOST_TEST(mentions(other.differences, "no manifest made in this resolution context (source-dir: " + d + "/b"),
             other.differences.size());
  // Row 2: a pre-included header edited.
  put(d + "/p/k.cu", k_kernel);
  put(d + "/p/pre.h", "#define V 31\n");
  settle();
  const auto row2 = explained(cache, d + "/p/k.cu", {"-include=" + d + "/p/pre.h"}, [&] { put(d + "/p/pre.h", "#define V 32\n"); });
  BOOST_TEST(mentions(row2, d + "/p/pre.h) changed"), row2.size());
  // Row 3: a header reached by a computed include edited.
  put(d + "/c/cfg.h", "#define STR(x) #x\n#define XSTR(x) STR(x)\n#define CFG_HDR XSTR(NAME.h)\n");
  put(d + "/c/k.cu", std::string("#include \"cfg.h\"\n#include CFG_HDR\n") + k_kernel);
  put(d + "/c/two.h", "#define V 42\n");
  settle();
  const auto row3 = explained(cache, d + "/c/k.cu", {"-DNAME=two"}, [&] { put(d + "/c/two.h", "#define V 43\n"); });
  BOOST_TEST(mentions(row3, d + "/c/two.h) changed"), row3.size());
  // Row 4: a digraph include edited.
  put(d + "/g/k.cu", std::string("%:include \"v.h\"\n") + k_kernel);
  put(d + "/g/v.h", "#define V 50\n");
  settle();
  const auto row4 = explained(cache, d + "/g/k.cu", {}, [&] { put(d + "/g/v.h", "#define V 51\n"); });
  BOOST_TEST(mentions(row4, d + "/g/v.h) changed"), row4.size());
  // Row 7: the target of an #include_next edited.
  put(d + "/n/first/cfg.h", "#include_next <cfg.h>\n#define V (BASE + 1)\n");
  put(d + "/n/second/cfg.h", "#define BASE 70\n");
  put(d + "/n/k.cu", std::string("#include <cfg.h>\n") + k_kernel);
  settle();
  const std::vector<std::string> folders{"-I" + d + "/n/first", "-I" + d + "/n/second"};
  const auto row7 = explained(cache, d + "/n/k.cu", folders, [&] { put(d + "/n/second/cfg.h", "#define BASE 80\n"); });
  BOOST_TEST(mentions(row7, d + "/n/second/cfg.h) changed"), row7.size());
  // A file appearing in a searched folder that no include names: no manifest holds any more (the
  // folder changed), but the headers resolve as before, so the lookup hits, and explain says so
  // with the key the lookup finds (issue 39: it said "miss … folder changed", with a key stored
  // nowhere).
  cache.get(program_of(d + "/n/k.cu", folders), k_arch);
  put(d + "/n/first/extra.h", "\n");
  settle();
  const kjit::MissExplanation same = cache.explain(program_of(d + "/n/k.cu", folders), k_arch);
  BOOST_TEST(same.hit);
  const kjit::Lookup found = cache.lookup(program_of(d + "/n/k.cu", folders), k_arch);
  BOOST_TEST((found.source == kjit::Source::disk || found.source == kjit::Source::memory));
  BOOST_TEST(cache.prepare(program_of(d + "/n/k.cu", folders), k_arch).key() == same.key);
  // A header that appears earlier in the search than the one included (the includer's folder,
  // before -I): the lookup compiles, and explain says miss, naming the header now found first.
  put(d + "/s/k.cu", std::string("#include \"v.h\"\n") + k_kernel);
  put(d + "/s/inc/v.h", "#define V 90\n");
  settle();
  const std::vector<std::string> inc{"-I" + d + "/s/inc"};
  const auto shadow = explained(cache, d + "/s/k.cu", inc, [&] { put(d + "/s/v.h", "#define V 91\n"); });
  BOOST_TEST(mentions(shadow, "include v.h (" + d + "/s/v.h) added"), shadow.size());
  BOOST_TEST((cache.lookup(program_of(d + "/s/k.cu", inc), k_arch).source == kjit::Source::compiled));
}

BOOST_AUTO_TEST_SUITE_END()
