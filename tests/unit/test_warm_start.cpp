// What a warm start needs from the store: a process with the toolchain already in memory still
// leaves it in every store it writes, so the next process there hits without loading NVRTC.
#include <boost/test/unit_test.hpp>

#include "fixture.hpp"

using namespace kjit::test;

BOOST_FIXTURE_TEST_SUITE(warm_start, CacheFixture)

BOOST_AUTO_TEST_CASE(a_second_cache_folder_of_a_process_lets_the_next_process_hit_without_nvrtc)
{
  const std::string base = config.cache_dir;
  config.cache_dir = base + "/first";
  kjit::Cache first(config);
  first.get(small_program("first"), kjit::Arch::parse("sm_90"));  // learns the toolchain's versions

  // The same process, another folder: the versions come from this process's memory.
  const std::string file = tmp.path() + "/second.cu";
  write_text(file, small_program("second").source);
  config.cache_dir = base + "/second";
  kjit::Cache second(config);
  second.get(kjit::program_from_file(file), kjit::Arch::parse("sm_90"));
  BOOST_TEST(second.stats().compiles == 1u);

  const std::string warm = probe_cache(config.cache_dir, file, "sm_90");
  BOOST_TEST(output_has_line(warm, "disk_hits: 1"), warm);
  BOOST_TEST(output_has_line(warm, "compiles: 0"), warm);
  BOOST_TEST(output_has_line(warm, "nvrtc_loaded: 0"), warm);
  BOOST_TEST(output_has_line(warm, "nvjitlink_loaded: 0"), warm);
}

BOOST_AUTO_TEST_SUITE_END()
