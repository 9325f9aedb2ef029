// KJIT_REMOTE_CACHE URLs: the accepted forms, a ConfigError naming the variable for the others,
// the password hidden; lists of servers and how keys spread over them; the key namespaces.
#include <boost/test/unit_test.hpp>

#include <kjit/config.hpp>
#include <kjit/error.hpp>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <pthread.h>
#include <tuple>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <netdb.h>
#include <sched.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <csignal>
#include <unistd.h>

#include "fixture.hpp"

#include "remote/redis.hpp"
#include "remote/remote_tier.hpp"
#include "remote/resolve.hpp"
#include "remote/server.hpp"
#include "config/remote_url.hpp"
#include "store/record.hpp"
#include "util/stopwatch.hpp"

BOOST_AUTO_TEST_SUITE(remote_url)

BOOST_AUTO_TEST_CASE(accepted_forms)
{
  const kjit::remote::RedisUrl plain = kjit::remote::parse_url("redis://cache.example:6380", "V");
  BOOST_TEST(plain.host == "cache.example");
  BOOST_TEST(plain.port == 6380);
  BOOST_TEST(plain.db == 0);
  BOOST_TEST(!plain.readonly);
  BOOST_TEST(plain.password.empty());
  const kjit::remote::RedisUrl full = kjit::remote::parse_url("redis://ci:pa:ss@10.0.0.5:7000/3?readonly", "V");
  BOOST_TEST(full.user == "ci");
  BOOST_TEST(full.password == "pa:ss");
  BOOST_TEST(full.host == "10.0.0.5");
  BOOST_TEST(full.port == 7000);
  BOOST_TEST(full.db == 3);
  BOOST_TEST(full.readonly);
  BOOST_TEST(full.display() == "redis://ci:***@10.0.0.5:7000/3?readonly");
  BOOST_TEST(kjit::remote::parse_url("redis://:secret@h:1", "V").display() == "redis://:***@h:1/0");
}

// An IPv6 address is written in brackets, as in every URL (redis-cli -u, redis-py); before, the
// brackets were taken as part of the host name, which no resolver knows: the URL was accepted and
// every lookup failed ("Name or service not known").
BOOST_AUTO_TEST_CASE(an_ipv6_address_is_written_in_brackets)
{
  const kjit::remote::RedisUrl url = kjit::remote::parse_url("redis://:pw@[::1]:6380/2", "V");
  BOOST_TEST(url.host == "::1");
  BOOST_TEST(url.port == 6380);
  BOOST_TEST(url.db == 2);
  BOOST_TEST(url.display() == "redis://:***@[::1]:6380/2");  // as written: warnings and `kjit doctor` name it
  BOOST_TEST(kjit::remote::parse_url("redis://[::1]:6380/2", "V").server() == "::1:6380/2");  // the placement's name
  for (const char* bad : {"redis://[::1]", "redis://[::1:6379", "redis://[]:1", "redis://x[::1]:1", "redis://[::1]x:1"}) {
    BOOST_CHECK_THROW(kjit::remote::parse_url(bad, "V"), kjit::ConfigError);
  }
  // The message says what is missing (a held-out mutant named the ']' for every missing port).
  const auto why = [](const char* bad) -> std::string {
    try {
      kjit::remote::parse_url(bad, "V");
    } catch (const kjit::ConfigError& e) {
      return e.what();
    }
    return {};
  };
  BOOST_TEST(why("redis://[::1:6379").find("without its ']'") != std::string::npos, why("redis://[::1:6379"));
  BOOST_TEST(why("redis://[::1]").find("no port") != std::string::npos, why("redis://[::1]"));
  BOOST_TEST(why("redis://h").find("no port") != std::string::npos, why("redis://h"));
}

BOOST_AUTO_TEST_CASE(bad_urls_name_the_variable)
{
  for (const char* bad : {"http://h:1", "redis://h", "redis://:1", "redis://h:0", "redis://h:65536", "redis://h:x",
                          "redis://h:1/db", "redis://h:1/", "redis://h:1?writable", "redis://user@h:1"}) {
    BOOST_TEST_CONTEXT(bad)
    {
      try {
        kjit::remote::parse_url(bad, "KJIT_REMOTE_CACHE");
        BOOST_FAIL("accepted");
      } catch (const kjit::ConfigError& e) {
        BOOST_TEST(e.variable() == "KJIT_REMOTE_CACHE");
      }
    }
  }
  BOOST_CHECK_THROW(kjit::option::remote_cache("redis://h"), kjit::ConfigError);
}

// A password may hold '?' and '/' (the credentials end at the last '@'); a malformed URL's error
// quotes no part of it, since a ',' or ' ' in a password splits the list inside the credentials.
BOOST_AUTO_TEST_CASE(errors_quote_no_password)
{
  const kjit::remote::RedisUrl odd = kjit::remote::parse_url("redis://u:s3?c/r@et@h:1/2?readonly", "V");
  BOOST_TEST(odd.password == "s3?c/r@et");
  BOOST_TEST(odd.host == "h");
  BOOST_TEST(odd.db == 2);
  BOOST_TEST(odd.readonly);
  for (const char* bad : {"redis://u:s3cr,et@h:1", "redis://u:s3cr et@h:1", "redis://u:s3cr?x,et@h:1",
                          "redis://u:s3cr/x,et@h:1"}) {
    BOOST_TEST_CONTEXT(bad)
    {
      try {
        kjit::remote::parse_urls(bad, "KJIT_REMOTE_CACHE");
        BOOST_FAIL("accepted");
      } catch (const kjit::ConfigError& e) {
        const std::string what = e.what();
        BOOST_TEST(what.find("s3cr") == std::string::npos);
        BOOST_TEST(what.find("et@") == std::string::npos);
      }
    }
  }
}

// Credentials are percent-decoded as in every redis:// client (redis-cli -u, redis-py): a password
// may hold ',', ' ' or '@' written %2C, %20, %40; a '%' not followed by two hex digits stays as is.
BOOST_AUTO_TEST_CASE(credentials_are_percent_decoded)
{
  const kjit::remote::RedisUrl url = kjit::remote::parse_url("redis://c%3Ai:p%40ss%2C%20w%25rd@h:1", "V");
  BOOST_TEST(url.user == "c:i");
  BOOST_TEST(url.password == "p@ss, w%rd");
  BOOST_TEST(url.host == "h");
  BOOST_TEST(kjit::remote::parse_url("redis://:100%@h:1", "V").password == "100%");
  BOOST_TEST(kjit::remote::parse_url("redis://:a%zz%4@h:1", "V").password == "a%zz%4");
  const auto urls = kjit::remote::parse_urls("redis://:a%2Cb@h:1,redis://h:2", "V");  // the ',' splits no URL
  BOOST_TEST(urls.size() == 2u);
  BOOST_TEST(urls[0].password == "a,b");
}

BOOST_AUTO_TEST_CASE(config_shows_no_password)
{
  kjit::option::remote_cache("redis://u:hunter2@127.0.0.1:6379/1");
  bool seen = false;
  for (const kjit::SettingValue& value : kjit::setting_values()) {
    BOOST_TEST(value.value.find("hunter2") == std::string::npos);
    if (value.name == "remote_cache") {
      seen = true;
      BOOST_TEST(value.value == "redis://u:***@127.0.0.1:6379/1");
      BOOST_TEST(value.source == "api");
    }
  }
  BOOST_TEST(seen);
  BOOST_TEST(kjit::current_config().remote_cache == "redis://u:hunter2@127.0.0.1:6379/1");
  kjit::option::remote_cache("");
  BOOST_TEST(kjit::current_config().remote_cache.empty());
  kjit::option::reset();
}

BOOST_AUTO_TEST_CASE(keys_are_namespaced_by_record_format)
{
  kjit::util::Sha256 key{};
  key[0] = 0xab;
  const std::string name = kjit::remote::record_name(key);
  BOOST_TEST(name == "kjit:v" + std::to_string(kjit::store::k_record_format) + ":ab" + std::string(62, '0'));
}

BOOST_AUTO_TEST_CASE(lists_of_servers)
{
  const auto urls = kjit::remote::parse_urls(" redis://a:1, redis://:pw@b:2/3\tredis://a:1/1 ", "V");
  BOOST_TEST(urls.size() == 3u);
  BOOST_TEST(urls[1].display() == "redis://:***@b:2/3");
  BOOST_TEST(urls[2].db == 1);
  for (const char* bad : {"", " , ", "redis://a:1 redis://a:1/0", "redis://a:1 redis://a"}) {
    BOOST_TEST_CONTEXT(bad)
    {
      BOOST_CHECK_THROW(kjit::remote::parse_urls(bad, "V"), kjit::ConfigError);
    }
  }
}

BOOST_AUTO_TEST_CASE(config_shows_no_password_of_any_server)
{
  kjit::option::remote_cache("redis://u:hunter2@h:1/1 redis://:swordfish@h:2,redis://v:pw3@h:3");
  for (const kjit::SettingValue& value : kjit::setting_values()) {
    if (value.name == "remote_cache") {
      BOOST_TEST(value.value == "redis://u:***@h:1/1 redis://:***@h:2,redis://v:***@h:3");
    }
  }
  kjit::option::reset();
}

// Rendezvous hashing: every key has one server, the same whatever the order of the list, and
// the keys are spread over all of them.
BOOST_AUTO_TEST_CASE(keys_spread_over_servers_by_hash)
{
  const auto urls = kjit::remote::parse_urls("redis://:pw@a:1 redis://b:2 redis://c:3", "V");
  const kjit::remote::RemoteTier tier(urls);
  const kjit::remote::RemoteTier reversed({urls[2], urls[0], urls[1]});
  const kjit::remote::RemoteTier other_password(kjit::remote::parse_urls("redis://:other@a:1 redis://b:2 redis://c:3", "V"));
  std::map<int, int> per_port;
  for (int i = 0; i < 300; ++i) {
    const kjit::util::Sha256 key = kjit::util::sha256("program " + std::to_string(i));
    const int port = tier.server_for(key).url().port;
    ++per_port[port];
    BOOST_TEST(reversed.server_for(key).url().port == port);
    BOOST_TEST(other_password.server_for(key).url().port == port);  // a server is named without its password
  }
  BOOST_TEST(per_port.size() == 3u);
  for (const auto& [port, count] : per_port) {
    BOOST_TEST_CONTEXT(port)
    {
      BOOST_TEST(count > 60);  // 100 expected
    }
  }
}

BOOST_AUTO_TEST_CASE(leases_have_their_own_namespace)
{
  kjit::util::Sha256 key{};
  key[0] = 0xab;
  BOOST_TEST(kjit::remote::lease_name(key) ==
             "kjit:lease:v" + std::to_string(kjit::store::k_record_format) + ":ab" + std::string(62, '0'));
}

// A server that takes the connection and never answers costs the lookups one I/O timeout in all,
// not one each: threads queued behind the first see the breaker it opened (before: 8 s for 8 threads).
BOOST_AUTO_TEST_CASE(a_silent_server_costs_one_timeout)
{
  int port = 0;
  const int listener = kjit::test::loopback_listener(port);  // connections complete in the backlog, never read
  kjit::remote::Server server(kjit::remote::parse_url("redis://127.0.0.1:" + std::to_string(port), "V"));
  const kjit::util::Stopwatch watch;
  std::vector<std::thread> threads;
  std::atomic<int> answered{0};
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&] {
      std::string error;
      if (server.ask({"GET", "k"}, error)) {
        ++answered;
      }
    });
  }
  for (std::thread& thread : threads) {
    thread.join();
  }
  ::close(listener);
  BOOST_TEST(answered == 0);
  BOOST_TEST(watch.elapsed_ms() < 2.5 * kjit::remote::k_io_timeout_ms);
}

// A server that answers a byte at a time, each within the read timeout, costs at most the I/O
// timeout for the whole reply (before: each read restarted it, and 25 bytes 200 ms apart took 5 s).
BOOST_AUTO_TEST_CASE(a_trickling_server_costs_one_timeout)
{
  int port = 0;
  const int listener = kjit::test::loopback_listener(port);
  std::thread trickler([listener] {
    const int peer = ::accept(listener, nullptr, nullptr);
    char request[256];
    if (peer < 0 || ::recv(peer, request, sizeof request, 0) <= 0) {
      return;
    }
    bool open = ::send(peer, "$25\r\n", 5, MSG_NOSIGNAL) == 5;
    for (int i = 0; i < 25 && open; ++i) {
      ::usleep(200000);
      open = ::send(peer, "x", 1, MSG_NOSIGNAL) == 1;
    }
    if (open) {
      ::send(peer, "\r\n", 2, MSG_NOSIGNAL);
    }
    ::close(peer);
  });
  kjit::remote::Server server(kjit::remote::parse_url("redis://127.0.0.1:" + std::to_string(port), "V"));
  const kjit::util::Stopwatch watch;
  std::string error;
  const auto reply = server.ask({"GET", "k"}, error);
  const double elapsed = watch.elapsed_ms();
  trickler.join();
  ::close(listener);
  BOOST_TEST(!reply.has_value());
  BOOST_TEST(elapsed < 1.5 * kjit::remote::k_io_timeout_ms);
  BOOST_TEST(error.find("no answer to GET within the 1000 ms timeout") != std::string::npos, error);
}

// A server answering garbage that hiredis parses as many small values (an array of 16 M integers,
// 64 MiB on the wire, under 16 KiB unread at any time, so the size checks never see it) is not
// read on: no command kjit sends is answered with an array, and each element would cost the
// client ≈ 60 bytes of memory (before: ≈ 1 GiB held while it was read).
BOOST_AUTO_TEST_CASE(a_server_answering_a_huge_array_is_not_read)
{
  constexpr std::size_t k_elements = 16u << 20;
  int port = 0;
  const int listener = kjit::test::loopback_listener(port);
  std::thread garbage([listener] {
    const int peer = ::accept(listener, nullptr, nullptr);
    char request[256];
    if (peer < 0 || ::recv(peer, request, sizeof request, 0) <= 0) {
      return;
    }
    const std::string header = "*" + std::to_string(k_elements) + "\r\n";
    bool open = ::send(peer, header.data(), header.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(header.size());
    std::string chunk;
    for (int i = 0; i < 16384; ++i) {
      chunk += ":1\r\n";
    }
    for (std::size_t sent = 0; sent < k_elements && open; sent += 16384) {
      open = ::send(peer, chunk.data(), chunk.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(chunk.size());
    }
    ::close(peer);
  });
  kjit::remote::RedisClient client(kjit::remote::parse_url("redis://127.0.0.1:" + std::to_string(port), "V"));
  kjit::remote::Reply reply;
  std::string failure;
  try {
    reply = client.command({"GET", "k"});
  } catch (const kjit::remote::RedisFailure& e) {
    failure = e.what();
  }
  ::shutdown(listener, SHUT_RDWR);
  garbage.join();
  ::close(listener);
  BOOST_TEST(failure.find("an array") != std::string::npos, failure);
}

// A server that answers every command with something no Redis answers to SET NX (here the
// integer 0) has not given the lease to another node: the caller compiles at once rather than
// poll for the whole wait bound (before: each compile waited it out, 20 s by default).
BOOST_AUTO_TEST_CASE(a_lease_answered_with_garbage_is_no_lease_and_no_wait)
{
  int port = 0;
  const int listener = kjit::test::loopback_listener(port);
  std::thread garbage([listener] {
    const int peer = ::accept(listener, nullptr, nullptr);
    char request[4096];
    while (peer >= 0 && ::recv(peer, request, sizeof request, 0) > 0) {
      if (::send(peer, ":0\r\n", 4, MSG_NOSIGNAL) != 4) {
        break;
      }
    }
    if (peer >= 0) {
      ::close(peer);
    }
  });
  auto server = std::make_unique<kjit::remote::Server>(kjit::remote::parse_url("redis://127.0.0.1:" + std::to_string(port), "V"));
  const kjit::remote::LeaseAnswer answer = kjit::remote::acquire_lease(*server, "kjit:v5:k", "kjit:lease:v5:k", 3000);
  server.reset();  // closes the connection: the fake server's loop ends
  garbage.join();
  ::close(listener);
  BOOST_TEST((answer.kind == kjit::remote::LeaseAnswer::Kind::none));
  BOOST_TEST(!answer.timed_out);
}

// A read-only node waits for a held lease as the others do, and like them not for one without an
// expiry (planted or PERSISTed: PTTL says -1), nor does a value of another type there open the
// breaker (WRONGTYPE is one key's fault). Before, a read-only node waited the whole bound for the
// first (every lookup of that key, for as long as it stayed) and stopped asking the server for 30 s
// after the second.
BOOST_AUTO_TEST_CASE(a_read_only_node_does_not_wait_for_a_lease_without_expiry)
{
  for (const std::string lease : {"$4\r\nheld\r\n", "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"}) {
    int port = 0;
    const int listener = kjit::test::loopback_listener(port);
    // No record; the lease is held, without an expiry.
    std::thread fake([listener, lease] {
      const int peer = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
      char request[4096];
      for (ssize_t n; peer >= 0 && (n = ::recv(peer, request, sizeof request - 1, 0)) > 0;) {
        request[n] = '\0';
        const std::string answer = std::strstr(request, "PTTL") != nullptr        ? ":-1\r\n"
                                   : std::strstr(request, "kjit:lease:") != nullptr ? lease
                                                                                    : "$-1\r\n";
        if (::send(peer, answer.data(), answer.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(answer.size())) {
          break;
        }
      }
      if (peer >= 0) {
        ::close(peer);
      }
    });
    auto server =
      std::make_unique<kjit::remote::Server>(kjit::remote::parse_url("redis://127.0.0.1:" + std::to_string(port) + "?readonly", "V"));
    const kjit::remote::LeaseAnswer answer = kjit::remote::acquire_lease(*server, "kjit:v6:k", "kjit:lease:v6:k", 300);
    const bool breaker_open = server->circuit_open();
    server.reset();  // closes the connection: the fake server's loop ends
    fake.join();
    ::close(listener);
    BOOST_TEST((answer.kind == kjit::remote::LeaseAnswer::Kind::none), lease);
    BOOST_TEST(!answer.timed_out, lease);  // compiled at once, not after the bound
    BOOST_TEST(!breaker_open, lease);
  }
}

namespace {

// This process's descriptors that a program it starts would inherit (no FD_CLOEXEC).
std::set<int> inheritable_fds()
{
  std::set<int> fds;
  for (int fd = 0; fd < 1024; ++fd) {
    const int flags = ::fcntl(fd, F_GETFD);
    if (flags >= 0 && (flags & FD_CLOEXEC) == 0) {
      fds.insert(fd);
    }
  }
  return fds;
}

} // namespace

// The connection to a server is not inherited by what the process starts: get_many's compile
// workers, or the host's own child processes (before: each worker held the parent's connection
// to Redis open for as long as it lived, hiredis 0.14 opens it without SOCK_CLOEXEC).
BOOST_AUTO_TEST_CASE(a_server_connection_is_not_inherited_by_child_processes)
{
  int port = 0;
  const int listener = kjit::test::loopback_listener(port);
  std::thread nil_server = kjit::test::nil_redis_server(listener);
  const std::set<int> before = inheritable_fds();
  std::set<int> after;
  {
    kjit::remote::RedisClient client(kjit::remote::parse_url("redis://127.0.0.1:" + std::to_string(port), "V"));
    BOOST_TEST((client.command({"GET", "k"}).kind == kjit::remote::Reply::Kind::nil));
    after = inheritable_fds();
  }
  nil_server.join();
  ::close(listener);
  BOOST_TEST(before == after);
}

namespace {

// The sockets this process has open, as /proc names them ("socket:[inode]").
std::set<std::string> open_sockets()
{
  std::set<std::string> sockets;
  for (int fd = 0; fd < 1024; ++fd) {
    char target[64] = {};
    const std::string link = "/proc/self/fd/" + std::to_string(fd);
    if (::readlink(link.c_str(), target, sizeof target - 1) > 0 && std::string(target).rfind("socket:", 0) == 0) {
      sockets.insert(target);
    }
  }
  return sockets;
}

} // namespace

// Nor is a connection while it is being opened: a program another thread starts during the connect
// (here it waits for a full backlog) does not get the socket (before: hiredis 0.14 creates it
// without SOCK_CLOEXEC, and kjit set FD_CLOEXEC once connected, so the child kept it open).
BOOST_AUTO_TEST_CASE(a_connection_being_opened_is_not_inherited_by_child_processes)
{
  int port = 0;
  const int listener = kjit::test::loopback_listener(port);
  ::listen(listener, 0);  // one connection completes, never accepted; the next ones wait
  const int filler = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  BOOST_REQUIRE(::connect(filler, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
  std::string socket;
  std::string child_fds;
  std::string failure;
  // The child must start while the socket is open, within its connect timeout: a host slowed down
  // by load may miss it, and then tries again (a child started too late proves nothing).
  bool started_while_open = false;
  for (int attempt = 0; attempt < 20 && !started_while_open; ++attempt) {
    const std::set<std::string> before = open_sockets();
    std::atomic<bool> done{false};
    socket.clear();
    child_fds.clear();
    std::thread connecting([&] {
      kjit::remote::RedisClient client(kjit::remote::parse_url("redis://127.0.0.1:" + std::to_string(port), "V"));
      try {
        client.command({"PING"});
      } catch (const kjit::remote::RedisFailure& e) {
        failure = e.what();
      }
      done = true;
    });
    while (socket.empty() && !done) {
      for (const std::string& name : open_sockets()) {
        socket = before.count(name) == 0 ? name : socket;
      }
    }
    if (!socket.empty()) {
      kjit::test::run("ls -l /proc/self/fd", child_fds);  // fork and exec while it connects
      started_while_open = open_sockets().count(socket) != 0;  // still open once the child ended
    }
    connecting.join();
  }
  ::close(filler);
  ::close(listener);
  BOOST_TEST_REQUIRE(started_while_open);
  BOOST_TEST_REQUIRE(child_fds.find(" -> ") != std::string::npos, child_fds);  // the child listed its descriptors
  BOOST_TEST(child_fds.find(socket) == std::string::npos, child_fds);
  BOOST_TEST(!failure.empty());
}

// A host whose standard input is closed gets its connection on descriptor 0; closing the client
// closes it there too (before: hiredis 0.14's redisFree() closes only descriptors above 0, and
// the connection stayed open, held by no one, for the life of the process).
BOOST_AUTO_TEST_CASE(a_connection_on_descriptor_0_is_closed_with_its_client)
{
  int port = 0;
  const int listener = kjit::test::loopback_listener(port);
  std::thread nil_server = kjit::test::nil_redis_server(listener);
  const int saved_stdin = ::fcntl(0, F_DUPFD_CLOEXEC, 3);
  ::close(0);
  bool on_0 = false;
  {
    kjit::remote::RedisClient client(kjit::remote::parse_url("redis://127.0.0.1:" + std::to_string(port), "V"));
    BOOST_TEST((client.command({"GET", "k"}).kind == kjit::remote::Reply::Kind::nil));
    char target[64] = {};
    on_0 = ::readlink("/proc/self/fd/0", target, sizeof target - 1) > 0 && std::string(target).rfind("socket:", 0) == 0;
  }
  const bool still_open = ::fcntl(0, F_GETFD) >= 0;
  if (still_open) {
    ::close(0);
  }
  ::dup2(saved_stdin, 0);
  ::close(saved_stdin);
  nil_server.join();
  ::close(listener);
  BOOST_TEST_REQUIRE(on_0);
  BOOST_TEST(!still_open);
}

namespace {

// Whether this host's TCP socket bound to 127.0.0.1:`port` is in CLOSE_WAIT (its peer closed).
bool in_close_wait(int port)
{
  char local[32];
  std::snprintf(local, sizeof local, "0100007F:%04X", port);
  std::ifstream table("/proc/net/tcp");
  std::string slot, address, remote, state, rest;
  while (table >> slot >> address >> remote >> state && std::getline(table, rest)) {
    if (address == local && state == "08") {
      return true;
    }
  }
  return false;
}

} // namespace

// A server that closed the connection since the last command (a restart, its idle timeout) is a
// failure of the next command, however large: never a SIGPIPE, which ends a host that keeps the
// default action (before: a write of 4 MiB into the closed connection raised it; from about
// 512 KiB here, a large kernel's record).
BOOST_AUTO_TEST_CASE(a_write_to_a_closed_connection_raises_no_sigpipe)
{
  static std::atomic<int> sigpipes{0};
  struct sigaction counting = {};
  counting.sa_handler = [](int) { ++sigpipes; };
  struct sigaction previous = {};
  ::sigaction(SIGPIPE, &counting, &previous);
  int port = 0;
  const int listener = kjit::test::loopback_listener(port);
  int client_port = 0;
  std::thread closing_server([listener, &client_port] {
    sockaddr_in peer_address{};
    socklen_t size = sizeof peer_address;
    const int peer = ::accept4(listener, reinterpret_cast<sockaddr*>(&peer_address), &size, SOCK_CLOEXEC);
    char request[256];
    if (peer >= 0 && ::recv(peer, request, sizeof request, 0) > 0) {
      ::send(peer, "+PONG\r\n", 7, MSG_NOSIGNAL);
    }
    client_port = ntohs(peer_address.sin_port);
    if (peer >= 0) {
      ::close(peer);
    }
  });
  kjit::remote::RedisClient client(kjit::remote::parse_url("redis://127.0.0.1:" + std::to_string(port), "V"));
  BOOST_TEST((client.command({"PING"}).kind == kjit::remote::Reply::Kind::status));
  closing_server.join();
  while (!in_close_wait(client_port)) {
    std::this_thread::yield();  // until the server's close has reached the client
  }
  std::string failure;
  try {
    client.command({"SET", "k", std::string(4u << 20, 'x')});
  } catch (const kjit::remote::RedisFailure& e) {
    failure = e.what();
  }
  ::close(listener);
  ::sigaction(SIGPIPE, &previous, nullptr);
  BOOST_TEST(sigpipes.load() == 0);
  BOOST_TEST(!failure.empty());
}

// pthread_cancel() of a thread waiting for the server's answer (a lookup of a host's thread)
// neither ends the process nor leaves that answer to be read as the next command's: the command
// finishes (bounded by its timeout), the thread is cancelled after it. Before, the unwinding
// reached Server::ask(), which is noexcept: std::terminate. In a child process.
BOOST_AUTO_TEST_CASE(a_thread_cancelled_while_it_waits_for_the_server_ends_alone)
{
  int port = 0;
  const int listener = kjit::test::loopback_listener(port);
  const pid_t child = ::fork();
  BOOST_TEST_REQUIRE(child >= 0);
  if (child == 0) {
    ::signal(SIGABRT, SIG_DFL);  // reported as the child's end, not caught by the test framework
    int asked[2];
    if (::pipe2(asked, O_CLOEXEC) != 0) {
      ::_exit(3);
    }
    std::atomic<bool> cancelled{false};
    // Answers each GET with its key's name, the first only once its asker was cancelled.
    std::thread fake([&] {
      for (int peer; (peer = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC)) >= 0;) {
        char request[256];
        for (ssize_t n; (n = ::recv(peer, request, sizeof request - 1, 0)) > 0;) {
          request[n] = '\0';
          const bool first = std::strstr(request, "first") != nullptr;
          if (first) {
            std::ignore = ::write(asked[1], "x", 1);
            while (!cancelled) {
              std::this_thread::yield();
            }
          }
          const char* answer = first ? "$5\r\nfirst\r\n" : "$6\r\nsecond\r\n";
          ::send(peer, answer, std::strlen(answer), MSG_NOSIGNAL);
        }
        ::close(peer);
      }
    });
    kjit::remote::Server server(kjit::remote::parse_url("redis://127.0.0.1:" + std::to_string(port), "V"));
    const auto body = [](void* argument) -> void* {
      std::string error;
      std::ignore = static_cast<kjit::remote::Server*>(argument)->ask({"GET", "first"}, error);
      ::pthread_testcancel();  // the host's next cancellation point
      return nullptr;
    };
    pthread_t thread;
    char c = 0;
    if (::pthread_create(&thread, nullptr, body, &server) != 0 || ::read(asked[0], &c, 1) != 1) {
      ::_exit(4);
    }
    ::pthread_cancel(thread);
    cancelled = true;
    void* result = nullptr;
    ::pthread_join(thread, &result);
    std::string error;
    const auto next = server.ask({"GET", "second"}, error);
    ::shutdown(listener, SHUT_RDWR);
    fake.detach();
    ::_exit(result != PTHREAD_CANCELED ? 5 : !next || next->text != "second" ? 6 : 0);
  }
  ::close(listener);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  BOOST_TEST(WIFEXITED(status), "the child ended by signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0));
  BOOST_TEST((WIFEXITED(status) ? WEXITSTATUS(status) : -1) == 0);
}

// The upload queue holds at most k_max_queued_bytes of records, not 256 records of up to 16 MiB
// each (4 GiB): a server that takes uploads more slowly than large kernels are compiled costs a
// bounded amount of memory (before: every record queued was kept, 160 MiB here). The server here
// takes the connection and never reads: the first SET waits for its deadline meanwhile.
BOOST_AUTO_TEST_CASE(the_upload_queue_is_bounded_in_bytes)
{
  int port = 0;
  const int listener = kjit::test::loopback_listener(port);
  std::size_t most = 0;
  {
    kjit::remote::Server server(kjit::remote::parse_url("redis://127.0.0.1:" + std::to_string(port), "V"));
    const std::string record(4u << 20, 'r');
    for (int i = 0; i < 40; ++i) {
      server.enqueue({"k" + std::to_string(i), record, "", ""});
      most = std::max(most, server.queued_bytes());
    }
  }  // its first SET times out, the breaker drops the rest
  ::close(listener);
  BOOST_TEST(most <= kjit::remote::k_max_queued_bytes);
  BOOST_TEST(most >= 4u * (4u << 20));  // records were queued, up to the bound
}

// A thread cancelled while it waits for another node's lease (up to KJIT_COMPILE_LOCK_TIMEOUT, as
// long as a day) is cancelled in that wait, between two polls, not after the whole bound (the
// bound here is an hour; the child's alarm ends it after 60 s). In a child process.
BOOST_AUTO_TEST_CASE(a_thread_cancelled_while_it_waits_for_a_lease_ends_in_the_wait)
{
  int port = 0;
  const int listener = kjit::test::loopback_listener(port);
  const pid_t child = ::fork();
  BOOST_TEST_REQUIRE(child >= 0);
  if (child == 0) {
    ::alarm(60);
    int polled[2];
    if (::pipe2(polled, O_CLOEXEC) != 0) {
      ::_exit(3);
    }
    // Another node holds every lease (SET NX: nil; PTTL: an hour left); no record appears.
    std::thread fake([&] {
      const int peer = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
      char request[4096];
      for (ssize_t n; peer >= 0 && (n = ::recv(peer, request, sizeof request - 1, 0)) > 0;) {
        request[n] = '\0';
        const bool pttl = std::strstr(request, "PTTL") != nullptr;
        const char* answer = pttl ? ":3600000\r\n" : "$-1\r\n";
        ::send(peer, answer, std::strlen(answer), MSG_NOSIGNAL);
        if (pttl) {
          std::ignore = ::write(polled[1], "x", 1);  // the waiter has seen the lease held
        }
      }
    });
    kjit::remote::Server server(kjit::remote::parse_url("redis://127.0.0.1:" + std::to_string(port), "V"));
    const auto body = [](void* argument) -> void* {
      std::ignore = kjit::remote::acquire_lease(*static_cast<kjit::remote::Server*>(argument), "kjit:v6:k",
                                                "kjit:lease:v6:k", 3600 * 1000);
      return nullptr;
    };
    pthread_t thread;
    char c = 0;
    if (::pthread_create(&thread, nullptr, body, &server) != 0 || ::read(polled[0], &c, 1) != 1) {
      ::_exit(4);
    }
    ::pthread_cancel(thread);
    void* result = nullptr;
    ::pthread_join(thread, &result);
    ::shutdown(listener, SHUT_RDWR);
    fake.detach();
    ::_exit(result != PTHREAD_CANCELED ? 5 : 0);
  }
  ::close(listener);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  BOOST_TEST(WIFEXITED(status), "the child ended by signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0));
  BOOST_TEST((WIFEXITED(status) ? WEXITSTATUS(status) : -1) == 0);
}

// A thread cancelled while it waits for another node's lease leaves no broken result to the
// threads of its process waiting for the same kernel: they look it up again themselves (one
// compiles it). Before, the cancellation's unwinding set the in-process single flight's result to
// an empty exception: its waiter read a result never made (a crash, or a null binary). In a child.
BOOST_AUTO_TEST_CASE(a_thread_cancelled_in_the_fleet_wait_leaves_its_waiters_a_lookup_of_their_own)
{
  kjit::test::CacheFixture fixture;
  int port = 0;
  const int listener = kjit::test::loopback_listener(port);
  const pid_t child = ::fork();
  BOOST_TEST_REQUIRE(child >= 0);
  if (child == 0) {
    ::signal(SIGABRT, SIG_DFL);  // reported as the child's end, not caught by the test framework
    ::signal(SIGSEGV, SIG_DFL);
    ::alarm(120);
    int held[2];
    if (::pipe2(held, O_CLOEXEC) != 0) {
      ::_exit(3);
    }
    static std::atomic<bool> released{false};
    // No record; another node holds the lease (an hour left) until `released`.
    std::thread fake([listener, &held] {
      for (int peer; (peer = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC)) >= 0;) {
        std::thread([peer, &held] {
          char request[4096];
          for (ssize_t n; (n = ::recv(peer, request, sizeof request - 1, 0)) > 0;) {
            request[n] = '\0';
            const bool lease = std::strstr(request, "kjit:lease:") != nullptr;
            const char* answer = std::strstr(request, "PTTL") != nullptr ? ":3600000\r\n"
                                 : lease && !released                   ? "$4\r\nheld\r\n"
                                                                        : "$-1\r\n";
            ::send(peer, answer, std::strlen(answer), MSG_NOSIGNAL);
            if (lease && !released) {
              std::ignore = ::write(held[1], "x", 1);  // a node has seen the lease held
            }
          }
          ::close(peer);
        }).detach();
      }
    });
    fake.detach();
    kjit::Config config = fixture.config;
    config.remote_cache = "redis://127.0.0.1:" + std::to_string(port) + "?readonly";
    config.compile_lock_timeout_s = 3600;
    static kjit::Cache* cache = nullptr;
    cache = new kjit::Cache(config);
    static const kjit::Program program = kjit::test::small_program("cancelled_in_the_fleet_wait");
    const auto first = [](void*) -> void* {
      std::ignore = cache->get(program, kjit::Arch::parse("sm_80"));
      return nullptr;
    };
    pthread_t waiting;
    char c = 0;
    if (::pthread_create(&waiting, nullptr, first, nullptr) != 0 || ::read(held[0], &c, 1) != 1) {
      ::_exit(4);
    }
    // The second asker of the same kernel waits for the first's result (a futex wait).
    static std::atomic<pid_t> second_tid{0};
    std::shared_ptr<const kjit::Binary> second_binary;
    std::string second_error;
    std::thread second([&] {
      second_tid = static_cast<pid_t>(::syscall(SYS_gettid));
      try {
        second_binary = cache->get(program, kjit::Arch::parse("sm_80"));
      } catch (const std::exception& e) {
        second_error = e.what();
      }
    });
    while (second_tid == 0) {
      std::this_thread::yield();
    }
    const std::string syscall_file = "/proc/self/task/" + std::to_string(second_tid.load()) + "/syscall";
    while (kjit::test::read_text(syscall_file).rfind(std::to_string(SYS_futex) + " ", 0) != 0) {
      std::this_thread::yield();
    }
    ::pthread_cancel(waiting);
    void* result = nullptr;
    ::pthread_join(waiting, &result);
    released = true;
    second.join();
    delete cache;
    if (!second_error.empty()) {
      std::fprintf(stderr, "the second asker: %s\n", second_error.c_str());
    }
    ::_exit(result != PTHREAD_CANCELED ? 5 : second_binary == nullptr ? 6 : second_binary->ptx.empty() ? 7 : 0);
  }
  ::close(listener);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  BOOST_TEST(WIFEXITED(status), "the child ended by signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0));
  BOOST_TEST((WIFEXITED(status) ? WEXITSTATUS(status) : -1) == 0);
}

// A fork()ed child that closes the parent's server (the default cache is rebuilt in a child, or
// exit() destroys it) neither joins the parent's upload thread, which it lacks (before: it hung
// for ever in pthread_join), nor waits in flush() for a queue nobody writes.
BOOST_AUTO_TEST_CASE(a_forked_child_closes_the_server_without_hanging)
{
  auto server = std::make_unique<kjit::remote::Server>(kjit::remote::parse_url("redis://127.0.0.1:1", "V"));
  server->enqueue({"k", std::string("v"), "", ""});  // starts the upload thread
  server->flush();
  const pid_t child = ::fork();
  BOOST_REQUIRE(child >= 0);
  if (child == 0) {
    server->enqueue({"k", std::string("v"), "", ""});
    server->flush();
    server.reset();
    ::_exit(0);
  }
  int status = -1;
  for (int i = 0; i < 100 && ::waitpid(child, &status, WNOHANG) == 0; ++i) {
    ::usleep(50000);
  }
  if (::waitpid(child, &status, WNOHANG) == 0) {
    ::kill(child, SIGKILL);
    ::waitpid(child, &status, 0);
    BOOST_FAIL("the child hung closing the server");
  }
  BOOST_TEST(WIFEXITED(status));
}

// A host name the resolver cannot answer costs the connect timeout, not the resolver's (its
// `timeout` and `attempts` in resolv.conf: 5 s × 2 by default, per process). Before, getaddrinfo()
// ran before the connect's deadline and blocked the lookup for as long as the resolver waited.
// The child gets a resolv.conf of its own (a mount namespace) naming a server that never answers.
BOOST_AUTO_TEST_CASE(a_host_name_the_resolver_cannot_answer_costs_the_connect_timeout)
{
  if (::geteuid() != 0) {
    BOOST_TEST_MESSAGE("skipped: a resolv.conf of the test's own needs root");
    return;
  }
  const kjit::test::TempDir tmp;
  const std::string resolv = tmp.path() + "/resolv.conf";
  std::ofstream(resolv) << "nameserver 127.0.0.1\noptions timeout:4 attempts:1\n";
  int pipe_fds[2];
  BOOST_REQUIRE(::pipe(pipe_fds) == 0);
  const pid_t child = ::fork();
  BOOST_REQUIRE(child >= 0);
  if (child == 0) {
    ::close(pipe_fds[0]);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(53);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const int silent = ::socket(AF_INET, SOCK_DGRAM, 0);  // receives the queries, never answers
    if (::unshare(CLONE_NEWNS) != 0 || ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        ::mount(resolv.c_str(), "/etc/resolv.conf", nullptr, MS_BIND, nullptr) != 0 || silent < 0 ||
        ::bind(silent, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
      ::_exit(77);
    }
    const char* host = "kjit-test-unanswered.example";
    kjit::remote::Server server(kjit::remote::parse_url(std::string("redis://") + host + ":6379", "V"));
    const kjit::util::Stopwatch watch;
    std::string error;
    const bool answered = server.ask({"GET", "k"}, error).has_value();
    const double kjit_ms = watch.elapsed_ms();
    // The premise: this resolver takes its whole timeout for the name.
    const kjit::util::Stopwatch resolver_watch;
    addrinfo* found = nullptr;
    std::ignore = ::getaddrinfo(host, "6379", nullptr, &found);
    const double resolver_ms = resolver_watch.elapsed_ms();
    const std::string report = std::to_string(answered) + " " + std::to_string(kjit_ms) + " " +
                               std::to_string(resolver_ms) + " " + error;
    std::ignore = ::write(pipe_fds[1], report.data(), report.size());
    ::_exit(0);
  }
  ::close(pipe_fds[1]);
  std::string report;
  char buffer[512];
  for (ssize_t got; (got = ::read(pipe_fds[0], buffer, sizeof buffer)) > 0;) {
    report.append(buffer, static_cast<std::size_t>(got));
  }
  ::close(pipe_fds[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 77) {
    BOOST_TEST_MESSAGE("skipped: no mount namespace or port 53 here");
    return;
  }
  BOOST_TEST_REQUIRE(WIFEXITED(status));
  BOOST_TEST_MESSAGE("child: " << report);
  int answered = -1;
  double kjit_ms = 0;
  double resolver_ms = 0;
  BOOST_TEST_REQUIRE(std::sscanf(report.c_str(), "%d %lf %lf", &answered, &kjit_ms, &resolver_ms) == 3);
  BOOST_TEST(resolver_ms >= 3500.0);  // the resolver's own wait (timeout:4)
  BOOST_TEST(answered == 0);
  BOOST_TEST(kjit_ms < 4.0 * kjit::remote::k_connect_timeout_ms);
  BOOST_TEST(report.find("kjit-test-unanswered.example") != std::string::npos);
}

// A child forked right after its parent resolved a name resolves names too. glibc's
// getaddrinfo_a() keeps a helper thread idle for a second after each answer and counts it: a
// child forked meanwhile inherited the count, queued its requests for that thread (which the
// child does not have) and started none, so no name resolved there, ever (the connect timeout
// each time, reproduced with "localhost").
BOOST_AUTO_TEST_CASE(a_child_forked_right_after_a_name_was_resolved_resolves_names)
{
  const auto deadline = [] { return kjit::remote::now_ms() + 20000; };  // bounds a failure, not a wait
  BOOST_TEST_REQUIRE(kjit::remote::resolve("localhost", 6379, deadline()) != nullptr);
  const pid_t child = ::fork();
  BOOST_TEST_REQUIRE(child >= 0);
  if (child == 0) {
    ::alarm(60);  // a hang ends here, as SIGALRM
    int code = 1;
    try {
      code = kjit::remote::resolve("localhost", 6379, deadline()) != nullptr ? 0 : 2;
    } catch (const kjit::remote::RedisFailure& e) {
      std::fprintf(stderr, "child: %s\n", e.what());
    }
    ::_exit(code);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  BOOST_TEST(WIFEXITED(status), "the child ended by signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0));
  BOOST_TEST(WEXITSTATUS(status) == 0);
}

BOOST_AUTO_TEST_SUITE_END()
