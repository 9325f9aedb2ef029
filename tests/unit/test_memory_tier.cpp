// The memory tier's byte bound and LRU order; a store eviction drops only what it evicted.
#include <boost/test/unit_test.hpp>

#include "fixture.hpp"

#include "cache/memory_tier.hpp"

#include <algorithm>
#include <cstdint>
#include <set>

namespace {

kjit::util::Sha256 key(int n)
{
  return kjit::util::sha256(std::to_string(n));
}

kjit::cache::Result result_of_size(std::size_t cubin_bytes)
{
  auto binary = std::make_shared<kjit::Binary>();
  binary->cubin.assign(cubin_bytes, 'x');
  return {binary, nullptr};
}

} // namespace

BOOST_AUTO_TEST_SUITE(memory_tier)

BOOST_AUTO_TEST_CASE(evicts_least_recently_used_beyond_the_byte_limit)
{
  const std::size_t one = result_of_size(1000).bytes();
  kjit::cache::MemoryTier tier(3 * one);
  for (int i = 0; i < 3; ++i) {
    tier.insert(key(i), result_of_size(1000));
  }
  BOOST_TEST(tier.size() == 3u);
  BOOST_TEST(tier.find(key(0)).has_value());  // 0 is now the most recent; 1 the oldest
  tier.insert(key(3), result_of_size(1000));
  BOOST_TEST(tier.size() == 3u);
  BOOST_TEST(!tier.find(key(1)).has_value());
  BOOST_TEST(tier.find(key(0)).has_value());
  BOOST_TEST(tier.find(key(2)).has_value());
  BOOST_TEST(tier.find(key(3)).has_value());
  BOOST_TEST(tier.bytes() <= 3 * one);
}

BOOST_AUTO_TEST_CASE(an_entry_larger_than_the_limit_is_not_kept)
{
  kjit::cache::MemoryTier tier(100);
  tier.insert(key(1), result_of_size(1000));
  BOOST_TEST(tier.size() == 0u);
  BOOST_TEST(tier.bytes() == 0u);
}

BOOST_AUTO_TEST_CASE(replacing_a_key_keeps_the_accounting)
{
  kjit::cache::MemoryTier tier(1 << 20);
  tier.insert(key(1), result_of_size(1000));
  const std::size_t after_one = tier.bytes();
  tier.insert(key(1), result_of_size(1000));
  BOOST_TEST(tier.bytes() == after_one);
  tier.clear();
  BOOST_TEST(tier.size() == 0u);
  BOOST_TEST(tier.bytes() == 0u);
}

BOOST_AUTO_TEST_CASE(erasing_keys_drops_only_those)
{
  kjit::cache::MemoryTier tier(1 << 20);
  for (int i = 0; i < 3; ++i) {
    tier.insert(key(i), result_of_size(1000));
  }
  const std::size_t before = tier.bytes();
  tier.erase({key(1), key(7)});  // 7 was never there
  BOOST_TEST(tier.size() == 2u);
  BOOST_TEST(tier.bytes() == before - result_of_size(1000).bytes());
  BOOST_TEST(!tier.find(key(1)).has_value());
  BOOST_TEST(tier.find(key(0)).has_value());
  BOOST_TEST(tier.find(key(2)).has_value());
}

// A hit moves its entry to the front: with room for two, A survives A, B, A, C and B goes (the
// lookup path is find_hit(); before, it did not move the entry, and the tier evicted by age).
BOOST_AUTO_TEST_CASE(a_hit_keeps_its_entry_from_eviction)
{
  const std::size_t one = result_of_size(1000).bytes();
  kjit::cache::MemoryTier tier(2 * one + one / 2);
  tier.insert(key(0), result_of_size(1000));  // A
  tier.insert(key(1), result_of_size(1000));  // B
  BOOST_TEST_REQUIRE(tier.find_hit(key(0), false).has_value());  // A again
  tier.insert(key(2), result_of_size(1000));  // C
  BOOST_TEST(tier.find(key(0)).has_value());
  BOOST_TEST(!tier.find(key(1)).has_value());
  BOOST_TEST(tier.find(key(2)).has_value());
}

// The same through Cache::lookup, the way applications use it.
BOOST_FIXTURE_TEST_CASE(a_cache_with_room_for_two_keeps_the_kernel_used_again, kjit::test::CacheFixture)
{
  const kjit::Arch arch = kjit::Arch::parse("sm_90");
  const kjit::Program a = kjit::test::small_program("lru_a");
  const kjit::Program b = kjit::test::small_program("lru_b");
  const kjit::Program c = kjit::test::small_program("lru_c");
  std::size_t largest = 0;
  std::size_t smallest = SIZE_MAX;
  {
    kjit::Cache cache(config);
    for (const kjit::Program* program : {&a, &b, &c}) {
      const std::size_t bytes = kjit::cache::Result{cache.get(*program, arch), nullptr}.bytes();
      largest = std::max(largest, bytes);
      smallest = std::min(smallest, bytes);
    }
  }
  kjit::Config limited = config;
  limited.memory_limit = 2 * largest + smallest / 2;  // room for two, not three
  kjit::Cache cache(limited);
  for (const kjit::Program* program : {&a, &b}) {  // a disk hit enters memory on its second hit
    cache.lookup(*program, arch);
    BOOST_TEST_REQUIRE(kjit::to_string(cache.lookup(*program, arch).source) == std::string("disk"));
  }
  BOOST_TEST_REQUIRE(kjit::to_string(cache.lookup(a, arch).source) == std::string("memory"));
  cache.lookup(c, arch);
  BOOST_TEST_REQUIRE(kjit::to_string(cache.lookup(c, arch).source) == std::string("disk"));
  BOOST_TEST(kjit::to_string(cache.lookup(a, arch).source) == std::string("memory"));
  BOOST_TEST(kjit::to_string(cache.lookup(b, arch).source) == std::string("disk"));
}

// KJIT_MAX_SIZE evicting one entry from the store leaves the others warm in memory (before, the
// whole memory tier was cleared: every kept kernel was read from the store again).
BOOST_FIXTURE_TEST_CASE(a_store_eviction_keeps_the_other_entries_in_memory, kjit::test::CacheFixture)
{
  const kjit::Arch arch = kjit::Arch::parse("sm_90");
  std::vector<kjit::Program> programs;
  for (const char* tag : {"warm_a", "warm_b", "warm_c", "warm_d"}) {
    programs.push_back(kjit::test::small_program(tag));
  }
  std::size_t three = 0;
  {
    kjit::Cache cache(config);
    for (int i = 0; i < 3; ++i) {
      cache.get(programs[i], arch);
    }
    cache.flush_mirror();
    const kjit::DiskUsage usage = cache.usage();
    three = usage.record_bytes + usage.mirror_bytes;
  }
  kjit::Config limited = config;
  limited.max_size = three + three / 6;  // room for three and a half: the fourth write evicts
  kjit::Cache cache(limited);
  for (int i = 0; i < 3; ++i) {
    BOOST_TEST(kjit::to_string(cache.lookup(programs[i], arch).source) == std::string("disk"));
    // The second disk hit puts it in the memory tier (the first only marks it).
    BOOST_TEST(kjit::to_string(cache.lookup(programs[i], arch).source) == std::string("disk"));
  }
  cache.get(programs[3], arch);
  BOOST_TEST_REQUIRE(cache.stats().compiles == 1u);
  std::set<std::string> kept;
  for (const kjit::EntryInfo& entry : cache.entries()) {
    kept.insert(entry.key);
  }
  BOOST_TEST_REQUIRE(kept.size() < 4u);  // something was evicted
  BOOST_TEST_REQUIRE(kept.size() >= 2u);
  for (const kjit::Program& program : programs) {
    if (kept.count(cache.prepare(program, arch).key()) != 0) {
      BOOST_TEST_CONTEXT(program.name)
      {
        BOOST_TEST(kjit::to_string(cache.lookup(program, arch).source) == std::string("memory"));
      }
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
