// The memory tier's byte bound and LRU order.
#include <boost/test/unit_test.hpp>

#include "cache/memory_tier.hpp"

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

BOOST_AUTO_TEST_SUITE_END()
