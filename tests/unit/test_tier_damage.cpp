// A record from a bundle or a remote server gets the full cubin check before it is served or copied
// into the local store, whose later hits check only the cubin's header: a record with valid sums
// over a cubin damaged past its header (forged, or written by a broken node) is never served, never
// stored, and the kernel is compiled instead (docs/reliability.md).
#include <boost/test/unit_test.hpp>

#include "fixture.hpp"

#include "bundle/writer.hpp"
#include "remote/redis.hpp"
#include "remote/remote_tier.hpp"
#include "config/remote_url.hpp"
#include "store/record.hpp"
#include "store/store.hpp"
#include "util/hash.hpp"

#include <arpa/inet.h>
#include <csignal>
#include <cstring>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace kjit::test;

namespace {

const kjit::Arch k_sm90 = kjit::Arch::parse("sm_90");

struct Forged {
  kjit::util::Sha256 key{};
  std::string record;      // sums valid, cubin damaged past its header
  std::string good_cubin;  // what a compile gives
};

// Compiles `program` in a cache of its own and forges its record (self-contained: headers inline).
Forged forge(const std::string& folder, const kjit::Program& program)
{
  kjit::Config own;
  own.cache_dir = folder;
  kjit::Cache cache(own);
  const kjit::PreparedProgram prepared = cache.prepare(program, k_sm90);
  Forged forged;
  forged.good_cubin = cache.get(prepared)->cubin;
  const std::string raw = raw_key(prepared);
  forged.key = kjit::util::digest_of_bytes(raw);
  auto store = kjit::store::Store::open(cache.store_path(), own.store_map_size);
  std::string why;
  auto entry = kjit::store::decode_record(store->get(kjit::store::Table::entries, raw).value(), forged.key,
                                          kjit::store::Sections::all, why);
  BOOST_TEST_REQUIRE(entry.has_value(), why);
  entry->binary.cubin = with_a_section_past_the_end(entry->binary.cubin);
  forged.record = kjit::store::encode_record(*entry, forged.key, kjit::store::HeaderStorage::inline_content);
  // The forgery is what the issue describes: the header check takes it, the full check does not.
  BOOST_TEST_REQUIRE(kjit::store::decode_record(forged.record, forged.key, kjit::store::Sections::artifacts, why,
                                                kjit::store::CubinCheck::header)
                       .has_value(),
                     why);
  BOOST_TEST_REQUIRE(!kjit::store::decode_record(forged.record, forged.key, kjit::store::Sections::all, why));
  return forged;
}

// The lookup of `program` in `cache` compiled it, and the store holds a record that passes the
// full check, with the compiled cubin.
void check_compiled_and_stored_sound(kjit::Cache& cache, const kjit::Program& program, const Forged& forged,
                                     const kjit::Config& config)
{
  const kjit::Lookup found = cache.lookup(program, k_sm90);
  BOOST_TEST(kjit::to_string(found.source) == std::string("compiled"));
  BOOST_TEST(found.binary->cubin == forged.good_cubin);
  std::string why;
  BOOST_TEST(kjit::check_cubin(found.binary->cubin, 90, why), why);
  BOOST_TEST(cache.stats().tier_errors == 1u);
  const auto store = kjit::store::Store::open(cache.store_path(), config.store_map_size);
  const auto bytes = store->get(kjit::store::Table::entries,
                                std::string(reinterpret_cast<const char*>(forged.key.data()), forged.key.size()));
  BOOST_TEST_REQUIRE(bytes.has_value());
  const auto stored = kjit::store::decode_record(*bytes, forged.key, kjit::store::Sections::all, why);
  BOOST_TEST_REQUIRE(stored.has_value(), why);
  BOOST_TEST(stored->binary.cubin == forged.good_cubin);
}

// A redis-server of the test's own on a free port, stopped at the end.
class RedisServer {
public:
  RedisServer(const std::string& dir)
  {
    const int probe = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    BOOST_TEST_REQUIRE(::bind(probe, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    BOOST_TEST_REQUIRE(::getsockname(probe, reinterpret_cast<sockaddr*>(&address), &length) == 0);
    m_port = ntohs(address.sin_port);
    ::close(probe);
    m_pid = ::fork();
    if (m_pid == 0) {
      const std::string port = std::to_string(m_port);
      ::execlp("redis-server", "redis-server", "--port", port.c_str(), "--bind", "127.0.0.1", "--save", "",
               "--appendonly", "no", "--dir", dir.c_str(), "--loglevel", "warning", static_cast<char*>(nullptr));
      ::_exit(127);
    }
    for (int i = 0; i < 100 && !answers(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    BOOST_TEST_REQUIRE(answers(), "redis-server (tools/setup installs it) did not start on port " << m_port);
  }
  ~RedisServer()
  {
    ::kill(m_pid, SIGTERM);
    ::waitpid(m_pid, nullptr, 0);
  }
  std::string url() const { return "redis://127.0.0.1:" + std::to_string(m_port); }
  kjit::remote::Reply command(const std::vector<std::string_view>& args) const
  {
    kjit::remote::RedisClient client(kjit::remote::parse_url(url(), "test"));
    return client.command(args);
  }

private:
  bool answers() const
  {
    try {
      return command({"PING"}).text == "PONG";
    } catch (const std::exception&) {
      return false;
    }
  }
  int m_port = 0;
  pid_t m_pid = -1;
};

// Where redis-server is not installed (tools/setup installs it) the remote case is reported as
// skipped, as the remote suites skip (tests/remote/redis.sh).
struct RedisInstalled {
  boost::test_tools::assertion_result operator()(boost::unit_test::test_unit_id) const
  {
    std::string output;
    boost::test_tools::assertion_result installed = run("command -v redis-server", output) == 0;
    installed.message() << "redis-server is not installed";
    return installed;
  }
};

} // namespace

BOOST_FIXTURE_TEST_SUITE(tier_damage, CacheFixture)

BOOST_AUTO_TEST_CASE(a_bundle_record_damaged_past_the_cubin_header_is_not_served_nor_stored)
{
  const kjit::Program program = small_program("forged_bundle");
  const Forged forged = forge(tmp.path() + "/maker", program);
  const std::string pack = tmp.path() + "/forged.kjitpack";
  kjit::bundle::write_bundle(pack, {{forged.key, forged.record}}, {}, kjit::store::k_record_format);
  config.bundles = {pack};
  kjit::Cache cache(config);
  check_compiled_and_stored_sound(cache, program, forged, config);
}

BOOST_AUTO_TEST_CASE(a_remote_record_damaged_past_the_cubin_header_is_not_served_nor_stored,
                     *boost::unit_test::precondition(RedisInstalled{}))
{
  const kjit::Program program = small_program("forged_remote");
  const Forged forged = forge(tmp.path() + "/maker", program);
  const RedisServer server(tmp.path());
  const std::string name = kjit::remote::record_name(forged.key);
  BOOST_TEST_REQUIRE(server.command({"SET", name, forged.record}).text == "OK");
  config.remote_cache = server.url();
  {
    kjit::Cache cache(config);
    check_compiled_and_stored_sound(cache, program, forged, config);
    BOOST_TEST(cache.stats().remote_errors == 1u);
  }
  // The compile's upload replaced the forged record on the server.
  std::string why;
  const kjit::remote::Reply now = server.command({"GET", name});
  BOOST_TEST(kjit::store::decode_record(now.text, forged.key, kjit::store::Sections::all, why).has_value(), why);
}

BOOST_AUTO_TEST_SUITE_END()
