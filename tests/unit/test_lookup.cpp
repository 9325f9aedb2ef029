// Cache::lookup: where each lookup's binary came from and what this call took, apart from the
// timings of the compile that made the binary.
#include <boost/test/unit_test.hpp>

#include "fixture.hpp"

#include <cstring>

using namespace kjit::test;

BOOST_FIXTURE_TEST_SUITE(lookup, CacheFixture)

BOOST_AUTO_TEST_CASE(each_lookup_says_where_its_binary_came_from_and_what_it_took)
{
  const kjit::Program program = small_program("outcome");
  const kjit::Arch arch = kjit::Arch::parse("sm_90");
  double compile_ms = 0;
  {
    kjit::Cache cache(config);
    const kjit::Lookup first = cache.lookup(program, arch);
    BOOST_TEST((first.source == kjit::Source::compiled));
    BOOST_TEST(std::strcmp(kjit::to_string(first.source), "compiled") == 0);
    BOOST_TEST(!first.binary->cubin.empty());
    compile_ms = first.binary->timings.total_ms;
    BOOST_TEST(compile_ms > 0);
    BOOST_TEST(first.lookup_ms >= compile_ms);  // this call did the compile, and prepared the program

    const kjit::Lookup again = cache.lookup(cache.prepare(program, arch));
    BOOST_TEST((again.source == kjit::Source::memory));
    BOOST_TEST(again.binary == first.binary);
    // The binary still carries the original compile's timings; this call took far less.
    BOOST_TEST(again.binary->timings.total_ms == compile_ms);
    BOOST_TEST(again.lookup_ms < compile_ms);
    BOOST_TEST(again.lookup_ms >= 0);
    BOOST_TEST(cache.get(program, arch) == first.binary);  // get() is lookup().binary
  }
  kjit::Cache later(config);  // a later process's view: the store
  const kjit::Lookup from_disk = later.lookup(program, arch);
  BOOST_TEST((from_disk.source == kjit::Source::disk));
  BOOST_TEST(std::strcmp(kjit::to_string(from_disk.source), "disk") == 0);
  BOOST_TEST(from_disk.binary->timings.total_ms == compile_ms);
  BOOST_TEST(from_disk.lookup_ms < compile_ms);
  BOOST_TEST(later.stats().disk_hits == 1u);
}

// A compile's lookup names the entry it stored: the key the compile established (what NVRTC read,
// a disk header here), the one prepare() gives afterwards, whose row the store has once stats()
// waited for the commit. One without a writable store names none.
BOOST_AUTO_TEST_CASE(a_compile_s_lookup_names_the_entry_it_stored)
{
  const std::string dir = tmp.path() + "/src";
  put(dir + "/k.h", "#define K 3\n");
  put(dir + "/k.cu", "#include \"k.h\"\nextern \"C\" __global__ void k(int* p) { *p = K; }\n");
  settle();
  const kjit::Program program = kjit::program_from_file(dir + "/k.cu");
  const kjit::Arch arch = kjit::Arch::parse("sm_90");
  kjit::Cache cache(config);
  const kjit::Lookup compiled = cache.lookup(program, arch);
  BOOST_TEST_REQUIRE((compiled.source == kjit::Source::compiled));
  BOOST_TEST_REQUIRE(compiled.key.size() == 64u);
  (void)cache.stats();  // waits for the commit
  BOOST_TEST(cache.resolve_key(compiled.key) == compiled.key);
  BOOST_TEST(cache.prepare(program, arch).key() == compiled.key);
  BOOST_TEST(kjit::Cache(config).lookup(program, arch).key == compiled.key);  // a disk hit's

  kjit::Config off = config;
  off.disable_cache = true;
  off.cache_dir = tmp.path() + "/off";
  const kjit::Lookup unstored = kjit::Cache(off).lookup(program, arch);
  BOOST_TEST((unstored.source == kjit::Source::compiled));
  BOOST_TEST(unstored.key.empty());
}

BOOST_AUTO_TEST_CASE(a_bundle_hit_is_reported_as_one)
{
  const kjit::Program program = small_program("bundled_outcome");
  const kjit::Arch arch = kjit::Arch::parse("sm_80");
  kjit::Cache(config).get(program, arch);
  const std::string pack = tmp.path() + "/outcome.kjitpack";
  kjit::Cache(config).export_bundle(pack);
  kjit::Config tiered = config;
  tiered.cache_dir = tmp.path() + "/tiered";
  tiered.bundles = {pack};
  kjit::Cache cache(tiered);
  const kjit::Lookup hit = cache.lookup(program, arch);
  BOOST_TEST((hit.source == kjit::Source::bundle));
  BOOST_TEST(cache.stats().bundle_hits == 1u);
  BOOST_TEST((cache.lookup(program, arch).source == kjit::Source::memory));
  BOOST_TEST((kjit::Cache(tiered).lookup(program, arch).source == kjit::Source::disk));  // promoted
}

BOOST_AUTO_TEST_CASE(a_remembered_compile_error_throws_as_get_does)
{
  const kjit::Program bad{"bad_outcome.cu", "__global__ void k() { oops; }", {}, {}, {}};
  kjit::Cache cache(config);
  BOOST_CHECK_THROW(cache.lookup(bad, kjit::Arch::parse("sm_90")), kjit::CompileError);
  BOOST_CHECK_THROW(kjit::Cache(config).lookup(bad, kjit::Arch::parse("sm_90")), kjit::CompileError);
  BOOST_TEST(std::strcmp(kjit::to_string(kjit::Source::compiled_elsewhere), "compiled by another process") == 0);
}

BOOST_AUTO_TEST_SUITE_END()
