// SHA-256 known answers (FIPS 180-2 and a multi-block message): keys and content names must stay
// the same bytes whichever library computes them.
#include <boost/test/unit_test.hpp>

#include "util/hash.hpp"

#include <string>

BOOST_AUTO_TEST_SUITE(hash)

namespace {

std::string hex_sha256(const std::string& data)
{
  return kjit::util::to_hex(kjit::util::sha256(data));
}

// 4099 bytes 0, 1, …, 255, 0, 1, …: crosses 64-byte blocks at every offset the chunks below use.
std::string counting_bytes()
{
  std::string bytes;
  for (int i = 0; i < 4099; ++i) {
    bytes.push_back(static_cast<char>(i % 256));
  }
  return bytes;
}

} // namespace

BOOST_AUTO_TEST_CASE(sha256_gives_the_standard_digests)
{
  BOOST_TEST(hex_sha256("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  BOOST_TEST(hex_sha256("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  BOOST_TEST(hex_sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
             "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  BOOST_TEST(hex_sha256(counting_bytes()) == "60a62725a6589b4c56d914f383935cf1f09fdb4c6e6814c1545d5ade78281416");
}

BOOST_AUTO_TEST_CASE(incremental_hashing_in_uneven_pieces_matches_and_resets)
{
  kjit::util::Sha256Hasher hasher;
  const std::string million(1000000, 'a');
  std::size_t at = 0;
  for (std::size_t piece : {1, 63, 64, 65, 127, 1000, 4096}) {
    hasher.update(std::string_view(million).substr(at, piece));
    at += piece;
  }
  hasher.update(std::string_view(million).substr(at));
  BOOST_TEST(kjit::util::to_hex(hasher.finish()) ==
             "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  // finish() leaves the hasher ready for the next message.
  const std::string bytes = counting_bytes();
  hasher.update(std::string_view(bytes).substr(0, 55)).update(std::string_view(bytes).substr(55, 9));
  hasher.update(std::string_view(bytes).substr(64));
  BOOST_TEST(kjit::util::to_hex(hasher.finish()) ==
             "60a62725a6589b4c56d914f383935cf1f09fdb4c6e6814c1545d5ade78281416");
  BOOST_TEST(kjit::util::to_hex(hasher.update("abc").finish()) ==
             "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

BOOST_AUTO_TEST_SUITE_END()
