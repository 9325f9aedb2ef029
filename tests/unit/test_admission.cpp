// Admission of disk hits into the memory tier: a program looked up once from the store keeps no
// copy in memory; its second disk hit puts it in the memory tier, so the third is a memory hit.
// Compiles go in at once, as before (docs/configuration.md, "The memory tier").
#include <boost/test/unit_test.hpp>

#include "fixture.hpp"

#include "cache/memory_tier.hpp"

#include <filesystem>
#include <memory>

using namespace kjit::test;

namespace {

const kjit::Arch k_sm90 = kjit::Arch::parse("sm_90");

std::string source_of(const kjit::Lookup& lookup)
{
  return kjit::to_string(lookup.source);
}

// Stores `program` (compiled by a cache that then goes away), so a new cache finds it on disk.
void store(const kjit::Config& config, const kjit::Program& program)
{
  kjit::Cache cache(config);
  try {
    cache.get(program, k_sm90);
  } catch (const kjit::CompileError&) {
  }
}

kjit::cache::Result result_of_size(std::size_t cubin_bytes)
{
  auto binary = std::make_shared<kjit::Binary>();
  binary->cubin.assign(cubin_bytes, 'x');
  return {binary, nullptr, std::nullopt};
}

kjit::util::Sha256 key(int n)
{
  return kjit::util::sha256("admission " + std::to_string(n));
}

} // namespace

BOOST_FIXTURE_TEST_SUITE(admission, CacheFixture)

BOOST_AUTO_TEST_CASE(a_program_looked_up_once_from_disk_is_not_kept)
{
  const kjit::Program program = small_program("once");
  store(config, program);
  kjit::Cache cache(config);
  kjit::Lookup first = cache.lookup(program, k_sm90);
  BOOST_TEST(source_of(first) == "disk");
  const std::weak_ptr<const kjit::Binary> watched = first.binary;
  first.binary.reset();
  BOOST_TEST(watched.expired());  // the caller held the only copy
}

BOOST_AUTO_TEST_CASE(the_second_disk_hit_admits_and_the_third_is_a_memory_hit)
{
  const kjit::Program program = small_program("twice");
  store(config, program);
  kjit::Cache cache(config);
  BOOST_TEST(source_of(cache.lookup(program, k_sm90)) == "disk");
  kjit::Lookup second = cache.lookup(program, k_sm90);
  BOOST_TEST(source_of(second) == "disk");
  const std::weak_ptr<const kjit::Binary> watched = second.binary;
  second.binary.reset();
  BOOST_TEST(!watched.expired());  // the memory tier keeps it now
  const kjit::Lookup third = cache.lookup(program, k_sm90);
  BOOST_TEST(source_of(third) == "memory");
  BOOST_TEST(third.binary == watched.lock());
  BOOST_TEST(source_of(cache.lookup(program, k_sm90)) == "memory");
  BOOST_TEST(cache.stats().disk_hits == 2u);
  BOOST_TEST(cache.stats().memory_hits == 2u);
  BOOST_TEST(cache.stats().compiles == 0u);
}

BOOST_AUTO_TEST_CASE(the_prepared_path_admits_on_the_second_disk_hit)
{
  const kjit::Program program = small_program("prepared");
  store(config, program);
  kjit::Cache cache(config);
  const kjit::PreparedProgram prepared = cache.prepare(program, k_sm90);
  kjit::Lookup first = cache.lookup(prepared);
  BOOST_TEST(source_of(first) == "disk");
  const std::weak_ptr<const kjit::Binary> watched = first.binary;
  first.binary.reset();
  BOOST_TEST(watched.expired());
  BOOST_TEST(source_of(cache.lookup(prepared)) == "disk");
  BOOST_TEST(source_of(cache.lookup(prepared)) == "memory");
  BOOST_TEST(source_of(cache.lookup(program, k_sm90)) == "memory");  // the same entry, by raw inputs
  BOOST_TEST(cache.stats().disk_hits == 2u);
}

BOOST_AUTO_TEST_CASE(a_remembered_compile_error_is_admitted_like_a_binary)
{
  const kjit::Program bad{"bad_admission.cu", "__global__ void k(int* p) { *p = undefined_name; }\n", {}, {}, {}};
  store(config, bad);
  kjit::Cache cache(config);
  for (int i = 0; i < 3; ++i) {
    BOOST_CHECK_THROW(cache.get(bad, k_sm90), kjit::CompileError);
  }
  const kjit::CacheStats stats = cache.stats();
  BOOST_TEST(stats.disk_hits == 2u);
  BOOST_TEST(stats.memory_hits == 1u);
  BOOST_TEST(stats.failed_hits == 3u);
  BOOST_TEST(stats.compiles == 0u);
}

BOOST_AUTO_TEST_CASE(a_compile_is_kept_at_once)
{
  const kjit::Program program = small_program("compiled");
  kjit::Cache cache(config);
  BOOST_TEST(source_of(cache.lookup(program, k_sm90)) == "compiled");
  BOOST_TEST(source_of(cache.lookup(program, k_sm90)) == "memory");
}

BOOST_AUTO_TEST_CASE(a_memory_limit_of_zero_keeps_nothing)
{
  const kjit::Program program = small_program("no_tier");
  store(config, program);
  config.memory_limit = 0;
  kjit::Cache cache(config);
  for (int i = 0; i < 3; ++i) {
    BOOST_TEST(source_of(cache.lookup(program, k_sm90)) == "disk");
  }
  BOOST_TEST(cache.stats().memory_hits == 0u);
}

BOOST_AUTO_TEST_CASE(the_tier_admits_a_key_offered_twice)
{
  kjit::cache::MemoryTier tier(std::size_t(1) << 20);
  BOOST_TEST(!tier.admit(key(1), result_of_size(1000)));
  BOOST_TEST(tier.size() == 0u);
  BOOST_TEST(tier.bytes() == 0u);
  BOOST_TEST(tier.admit(key(1), result_of_size(1000)));
  BOOST_TEST(tier.size() == 1u);
  BOOST_TEST(tier.find(key(1)).has_value());
  tier.clear();  // forgets the marks too
  BOOST_TEST(!tier.admit(key(1), result_of_size(1000)));
  kjit::cache::MemoryTier none(0);
  BOOST_TEST(!none.admit(key(2), result_of_size(10)));
  BOOST_TEST(!none.admit(key(2), result_of_size(10)));
  BOOST_TEST(none.size() == 0u);
}

BOOST_AUTO_TEST_CASE(a_bulk_of_keys_offered_once_keeps_nothing_and_admission_still_works_after)
{
  kjit::cache::MemoryTier tier(std::size_t(1) << 30);
  std::size_t admitted = 0;
  for (int i = 0; i < 40000; ++i) {  // more than the doorkeeper holds before it starts over
    admitted += tier.admit(key(i), result_of_size(100)) ? 1 : 0;
  }
  // Only the doorkeeper's false positives got in (≈ 1.4 % at most, ≈ 0.5 % on average).
  BOOST_TEST(admitted < 400u);
  BOOST_TEST(tier.size() == admitted);
  BOOST_TEST(!tier.admit(key(-1), result_of_size(100)));
  BOOST_TEST(tier.admit(key(-1), result_of_size(100)));
}

// A project moved to another folder: its programs with includes get a provisional key in the
// first process, found by their headers' prediction (load_predicted). That disk hit was put in
// the memory tier at once (every kernel of a moved project's bulk warm start kept a copy).
BOOST_AUTO_TEST_CASE(a_moved_project_looked_up_once_from_disk_is_not_kept)
{
  const std::string before = tmp.path() + "/project";
  const std::string after = tmp.path() + "/moved";
  std::filesystem::create_directories(before);
  write_text(before + "/k.cu", "#include \"h.h\"\nextern \"C\" __global__ void k(int* p) { *p = V; }\n");
  write_text(before + "/h.h", "#define V 1\n");
  settle();
  const auto at = [](const std::string& dir) { return kjit::Program{dir + "/k.cu", read_text(dir + "/k.cu"), {}, {}, {}}; };
  kjit::Cache(config).get(at(before), k_sm90);
  std::filesystem::rename(before, after);
  settle();  // the moved folder's ctime past "too new" (docs/includes.md): its manifest is recorded
  kjit::Cache cache(config);
  kjit::Lookup first = cache.lookup(at(after), k_sm90);  // provisional key, its prediction on disk
  BOOST_TEST(source_of(first) == "disk");
  const std::weak_ptr<const kjit::Binary> watched = first.binary;
  first.binary.reset();
  BOOST_TEST(watched.expired());
  BOOST_TEST(source_of(cache.lookup(at(after), k_sm90)) == "disk");
  BOOST_TEST(source_of(cache.lookup(at(after), k_sm90)) == "memory");
  BOOST_TEST(cache.stats().disk_hits == 2u);
}

BOOST_AUTO_TEST_SUITE_END()
