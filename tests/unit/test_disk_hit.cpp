// What a disk hit checks of a stored cubin: its header (the record's checksum proves the rest is
// what the store took, checked in full); damage anywhere in it is still caught and repaired.
#include <boost/test/unit_test.hpp>

#include "fixture.hpp"

#include "rtc/elf_view.hpp"
#include "store/record.hpp"
#include "store/store.hpp"
#include "util/hash.hpp"

#include <cstring>
#include <xxhash.h>

using namespace kjit::test;

namespace {

const kjit::Arch k_sm90 = kjit::Arch::parse("sm_90");

// The entry key of `program` in `cache` as the LMDB key (32 raw bytes).
std::string stored_key(kjit::Cache& cache, const kjit::Program& program)
{
  return raw_key(cache.prepare(program, k_sm90));
}

} // namespace

BOOST_FIXTURE_TEST_SUITE(disk_hit, CacheFixture)

BOOST_AUTO_TEST_CASE(a_flipped_byte_inside_a_stored_cubin_is_quarantined_and_recompiled)
{
  const kjit::Program program = small_program("flip");
  std::string good;
  {
    kjit::Cache cache(config);
    good = cache.get(program, k_sm90)->cubin;
    const std::string key = stored_key(cache, program);
    auto store = kjit::store::Store::open(cache.store_path(), config.store_map_size);
    std::string bytes = store->get(kjit::store::Table::entries, key).value();
    const auto at = bytes.find(good);
    BOOST_TEST_REQUIRE(at != std::string::npos);
    // Past the header the hit checks: only the record's checksum can see this byte.
    bytes[at + good.size() / 2] = static_cast<char>(bytes[at + good.size() / 2] ^ 0x10);
    store->put(kjit::store::Table::entries, key, bytes);
  }
  for (int round = 0; round < 2; ++round) {  // by the direct row, then by the SHA-256 key
    kjit::Cache cache(config);
    const auto binary = round == 0 ? cache.get(program, k_sm90) : cache.get(cache.prepare(program, k_sm90));
    BOOST_TEST(binary->cubin == good);
    BOOST_TEST(cache.stats().quarantined == (round == 0 ? 1u : 0u));
    BOOST_TEST(cache.stats().compiles == (round == 0 ? 1u : 0u));
  }
}

BOOST_AUTO_TEST_CASE(the_cubin_header_check_refuses_what_the_full_check_refuses_at_the_header)
{
  const std::string cubin = kjit::compile(small_program("header"), k_sm90).cubin;
  std::string why;
  BOOST_TEST(kjit::rtc::check_cubin_header(cubin, 90, why), why);
  BOOST_TEST(!kjit::rtc::check_cubin_header(cubin, 80, why));
  BOOST_TEST(why.find("sm_90, expected sm_80") != std::string::npos, why);
  for (const std::size_t at : {0, 4, 5, 18, 47, 58, 61, 62}) {  // magic, class, data, machine, tables
    std::string damaged = cubin;
    damaged[at] = static_cast<char>(damaged[at] ^ 0x7f);
    BOOST_TEST(!kjit::rtc::check_cubin_header(damaged, 90, why), at);
    BOOST_TEST(!kjit::check_cubin(damaged, 90, why), at);
  }
  for (const std::size_t size : {0, 63, 64}) {
    BOOST_TEST(!kjit::rtc::check_cubin_header(std::string_view(cubin).substr(0, size), 90, why), size);
  }
}

BOOST_AUTO_TEST_CASE(records_from_outside_the_store_get_the_full_walk_and_store_hits_the_header)
{
  // A forged record: checksum recomputed over a cubin whose header is sound and whose section 1
  // lies past the end. Such bytes never enter the store (compiles, bundles and remote records
  // are walked in full first); a record from a bundle or a remote still is.
  kjit::store::Entry entry;
  entry.program_name = "forged.cu";
  entry.binary = kjit::compile(small_program("forged"), k_sm90);
  entry.binary.cubin = with_a_section_past_the_end(entry.binary.cubin);
  const kjit::util::Sha256 key = kjit::util::sha256("forged");
  const std::string record = kjit::store::encode_record(entry, key);
  std::string why;
  BOOST_TEST(!kjit::store::decode_record(record, key, kjit::store::Sections::all, why).has_value());
  BOOST_TEST(why.find("section 1 lies past the end") != std::string::npos, why);
  const auto hit = kjit::store::decode_record(record, key, kjit::store::Sections::artifacts, why,
                                              kjit::store::CubinCheck::header);
  BOOST_TEST_REQUIRE(hit.has_value(), why);
  BOOST_TEST(hit->binary.cubin == entry.binary.cubin);
  // A cubin for another SM is refused by either check.
  entry.binary.cubin = kjit::compile(small_program("forged"), kjit::Arch::parse("sm_80")).cubin;
  const std::string other = kjit::store::encode_record(entry, key);
  BOOST_TEST(!kjit::store::decode_record(other, key, kjit::store::Sections::artifacts, why,
                                         kjit::store::CubinCheck::header));
  BOOST_TEST(why.find("expected sm_90") != std::string::npos, why);
}

BOOST_AUTO_TEST_CASE(checksums_are_xxh3_128_whichever_loop_computes_them)
{
  // util::checksum runs xxhash's AVX2 loop where the CPU has one: the digests must stay the bytes
  // every stored record and direct row was written with (xxhash.h's SSE2 build, here).
  std::string data;
  for (std::size_t i = 0; i < 9000; ++i) {
    data += static_cast<char>((i * 2654435761u) >> 13);
  }
  for (std::size_t size = 0; size <= data.size(); size += size < 300 ? 1 : 97) {
    const std::string_view part = std::string_view(data).substr(0, size);
    XXH128_canonical_t expected;
    XXH128_canonicalFromHash(&expected, XXH3_128bits(part.data(), part.size()));
    const kjit::util::Checksum sum = kjit::util::checksum(part);
    BOOST_TEST(std::memcmp(sum.data(), expected.digest, sum.size()) == 0, size);
    for (const std::size_t cut : {std::size_t(0), size / 3, size}) {
      const kjit::util::Checksum two = kjit::util::checksum(part.substr(0, cut), part.substr(cut));
      BOOST_TEST(std::memcmp(two.data(), expected.digest, two.size()) == 0, size << " cut " << cut);
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
