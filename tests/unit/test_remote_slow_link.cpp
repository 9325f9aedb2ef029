// A record that arrives steadily over a slow link is read (a command's time grows with its
// declared size), while a short reply trickled a byte at a time still costs k_io_timeout_ms
// (remote_url/a_trickling_server_costs_one_timeout).
#include <boost/test/unit_test.hpp>

#include "fixture.hpp"

#include "remote/redis.hpp"
#include "util/stopwatch.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

namespace {

constexpr std::size_t k_value_bytes = 12u << 20;   // a large record, under k_max_reply_bytes
constexpr std::size_t k_chunk_bytes = 64u << 10;
constexpr int k_chunk_pause_us = 8000;             // ≈ 8 MiB/s: the value takes ≈ 1.5 s


// Answers one GET with a k_value_bytes bulk string sent at a steady ≈ 8 MiB/s.
void serve_slowly(int listener)
{
  const int peer = ::accept(listener, nullptr, nullptr);
  char request[256];
  if (peer < 0 || ::recv(peer, request, sizeof request, 0) <= 0) {
    return;
  }
  const std::string header = "$" + std::to_string(k_value_bytes) + "\r\n";
  bool open = ::send(peer, header.data(), header.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(header.size());
  const std::string chunk(k_chunk_bytes, 'r');
  for (std::size_t sent = 0; sent < k_value_bytes && open; sent += k_chunk_bytes) {
    ::usleep(k_chunk_pause_us);
    open = ::send(peer, chunk.data(), chunk.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(chunk.size());
  }
  if (open) {
    ::send(peer, "\r\n", 2, MSG_NOSIGNAL);
  }
  ::close(peer);
}

} // namespace

BOOST_AUTO_TEST_SUITE(remote_slow_link)

// Before: every command had 1 s in all, so a 12 MiB record at 8 MiB/s (or 6 MB at 6 MB/s through a
// throttling proxy) was never read, and the failure opened the breaker for 30 s.
BOOST_AUTO_TEST_CASE(a_large_record_on_a_slow_link_is_read)
{
  int port = 0;
  const int listener = kjit::test::loopback_listener(port);
  std::thread server(serve_slowly, listener);
  kjit::remote::RedisClient client(kjit::remote::parse_url("redis://127.0.0.1:" + std::to_string(port), "V"));
  const kjit::util::Stopwatch watch;
  std::string failure;
  kjit::remote::Reply reply;
  try {
    reply = client.command({"GET", "k"});
  } catch (const kjit::remote::RedisFailure& e) {
    failure = e.what();
  }
  const double elapsed = watch.elapsed_ms();
  server.join();
  ::close(listener);
  BOOST_TEST(failure.empty(), failure);
  BOOST_TEST((reply.kind == kjit::remote::Reply::Kind::string));
  BOOST_TEST(reply.text.size() == k_value_bytes);
  BOOST_TEST(elapsed > kjit::remote::k_io_timeout_ms);  // it did take longer than one timeout
}

BOOST_AUTO_TEST_SUITE_END()
