// Small API defects of issue 20: Cache{Config{}}, Arch::parse's message, explain() on a repeated option.
#include <boost/test/unit_test.hpp>

#include "fixture.hpp"

#include <algorithm>

using namespace kjit::test;

BOOST_FIXTURE_TEST_SUITE(api_small, CacheFixture)

BOOST_AUTO_TEST_CASE(a_config_without_a_cache_folder_names_the_field)
{
  // Used to be "cannot create the cache folder : No such file or directory".
  try {
    kjit::Cache cache{kjit::Config{}};
    BOOST_ERROR("expected ConfigError");
  } catch (const kjit::ConfigError& e) {
    BOOST_TEST(e.variable() == "cache_dir");
    BOOST_TEST(std::string(e.what()).find("Config::cache_dir is empty") != std::string::npos, e.what());
    BOOST_TEST(std::string(e.what()).find("folder :") == std::string::npos, e.what());
  }
  kjit::Config memory_only;
  memory_only.disable_cache = true;  // no folder needed
  kjit::Cache cache(memory_only);
  BOOST_TEST(!cache.has_disk_tier());
}

BOOST_AUTO_TEST_CASE(every_arch_parse_error_lists_every_form)
{
  for (const char* bad : {"xx_90", "sm_9", "sm_90b", "compute_"}) {
    try {
      kjit::Arch::parse(bad);
      BOOST_ERROR("expected ArchError for " << bad);
    } catch (const kjit::ArchError& e) {
      BOOST_TEST(std::string(e.what()).find("sm_XYf") != std::string::npos, e.what());
      BOOST_TEST(std::string(e.what()).find(bad) != std::string::npos, e.what());
    }
  }
}

BOOST_AUTO_TEST_CASE(explain_calls_a_repeated_option_repeated_not_reordered)
{
  const std::string include = tmp.path() + "/inc";
  std::string output;
  BOOST_TEST_REQUIRE(kjit::test::run("mkdir -p '" + include + "'", output) == 0);
  kjit::Program program = small_program("explained");
  program.options = {"-DX=1", "-I" + include};
  kjit::Cache cache(config);
  cache.get(program, kjit::Arch::parse("sm_90"));
  for (const std::string& repeated : {std::string("-DX=1"), "-I" + include}) {
    kjit::Program twice = program;
    twice.options.push_back(repeated);
    const kjit::MissExplanation why = cache.explain(twice, kjit::Arch::parse("sm_90"));
    if (why.hit) {
      continue;  // the key does not depend on it (a repeated -I folder is searched once)
    }
    std::string all;
    for (const std::string& line : why.differences) {
      all += line + "\n";
    }
    BOOST_TEST(all.find("reordered") == std::string::npos, all);
    BOOST_TEST(all.find("repeated (2 times, was 1)") != std::string::npos, all);
  }
  kjit::Program swapped = program;
  std::swap(swapped.options[0], swapped.options[1]);
  const kjit::MissExplanation why = cache.explain(swapped, kjit::Arch::parse("sm_90"));
  BOOST_TEST(!why.hit);
  BOOST_TEST((std::find(why.differences.begin(), why.differences.end(), "options reordered") != why.differences.end()));
}

BOOST_AUTO_TEST_SUITE_END()
