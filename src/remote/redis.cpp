// The hiredis calls the remote tier makes, through function pointers bound after dlopen.
#include "remote/redis.hpp"

#include "remote/resolve.hpp"

#include "util/dynamic_library.hpp"
#include "util/unique_handle.hpp"

#include <hiredis/hiredis.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <dlfcn.h>
#include <fcntl.h>
#include <mutex>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <optional>
#include <poll.h>
#include <sys/socket.h>
#include <tuple>
#include <unistd.h>

namespace kjit::remote {

namespace {

#define KJIT_STRINGIFY2(x) #x
#define KJIT_STRINGIFY(x) KJIT_STRINGIFY2(x)

struct Hiredis {
  std::optional<util::DynamicLibrary> library;
  std::string error;
  decltype(&::redisConnectFd) connect_fd = nullptr;
  decltype(&::redisSetTimeout) set_timeout = nullptr;
  decltype(&::redisBufferRead) buffer_read = nullptr;
  decltype(&::redisGetReplyFromReader) reply_from_reader = nullptr;
  decltype(&::freeReplyObject) free_reply = nullptr;
  decltype(&::redisFree) free_context = nullptr;
};

// hiredis, loaded once: the soname of the headers kjit was built with (the reply layout differs
// between versions), then the development link. Never unloaded (and never destroyed): a default
// Cache's upload thread may still use it while static objects are destroyed at exit.
const Hiredis& hiredis()
{
  static const Hiredis* api = [] {
    auto* loaded = new Hiredis;
    Hiredis& h = *loaded;
    for (const char* name : {"libhiredis.so." KJIT_STRINGIFY(HIREDIS_SONAME), "libhiredis.so"}) {
      h.library = util::DynamicLibrary::open(name, RTLD_LOCAL, h.error);
      if (h.library) {
        break;
      }
    }
    if (h.library && !(h.library->bind(h.connect_fd, "redisConnectFd") &&
                       h.library->bind(h.set_timeout, "redisSetTimeout") &&
                       h.library->bind(h.buffer_read, "redisBufferRead") &&
                       h.library->bind(h.reply_from_reader, "redisGetReplyFromReader") &&
                       h.library->bind(h.free_reply, "freeReplyObject") && h.library->bind(h.free_context, "redisFree"))) {
      h.error = h.library->path() + " lacks a hiredis function";
      h.library.reset();
    }
    return loaded;
  }();
  return *api;
}

timeval timeval_of(std::int64_t ms)
{
  return timeval{static_cast<time_t>(ms / 1000), static_cast<suseconds_t>((ms % 1000) * 1000)};
}

// The length a bulk reply's complete header declares ("$<digits>\r\n" at `at`, its '$' perhaps
// taken by the reader already), or -1.
long long declared_length(const char* at, std::size_t size)
{
  std::size_t i = size > 0 && at[0] == '$' ? 1 : 0;
  const std::size_t first = i;
  long long value = 0;
  for (; i < size && i - first < 18 && at[i] >= '0' && at[i] <= '9'; ++i) {
    value = value * 10 + (at[i] - '0');
  }
  return i > first && i + 1 < size && at[i] == '\r' && at[i + 1] == '\n' ? value : -1;
}

// The time `bytes` may take at k_min_transfer_bytes_per_s, beyond k_io_timeout_ms.
std::int64_t transfer_ms(long long bytes)
{
  return bytes > 0 ? bytes * 1000 / k_min_transfer_bytes_per_s : 0;
}

std::string timed_out(const char* what, std::string_view verb)
{
  return std::string(what) + std::string(verb) + " within the " + std::to_string(k_io_timeout_ms) + " ms timeout";
}

// A socket connected to `url`'s server within k_connect_timeout_ms (its name resolved, then every
// address of its host in turn, within that one time), close-on-exec from its creation: hiredis
// 0.14 creates its socket without SOCK_CLOEXEC, so a program another thread started during its
// connect kept the connection open. Blocking once connected, like hiredis's own. Throws
// RedisFailure.
util::UniqueFd connect_socket(const RedisUrl& url)
{
  const std::int64_t deadline_ms = now_ms() + k_connect_timeout_ms;  // resolving the name included
  const Addresses addresses = resolve(url.host, url.port, deadline_ms);
  const addrinfo* found = addresses.get();
  std::string why = "no address";
  for (const addrinfo* address = found; address != nullptr; address = address->ai_next) {
    util::UniqueFd fd(::socket(address->ai_family, address->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, address->ai_protocol));
    if (!fd) {
      why = std::strerror(errno);
      continue;
    }
    int error = ::connect(fd.get(), address->ai_addr, address->ai_addrlen) == 0 ? 0 : errno;
    if (error == EINPROGRESS) {
      pollfd ready{fd.get(), POLLOUT, 0};
      int polled = 0;
      for (std::int64_t left; (left = deadline_ms - now_ms()) > 0;) {
        polled = ::poll(&ready, 1, static_cast<int>(left));
        if (polled >= 0 || errno != EINTR) {
          break;
        }
        polled = 0;  // a signal: wait for what is left (none left: timed out)
      }
      socklen_t size = sizeof error;
      if (polled <= 0) {
        error = polled == 0 ? ETIMEDOUT : errno;
      } else if (::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &error, &size) != 0) {
        error = errno;
      }
    }
    if (error == 0) {
      const int one = 1;
      std::ignore = ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // as hiredis does
      std::ignore = ::fcntl(fd.get(), F_SETFL, ::fcntl(fd.get(), F_GETFL) & ~O_NONBLOCK);
      return fd;
    }
    why = error == ETIMEDOUT ? "Connection timed out within the " + std::to_string(k_connect_timeout_ms) + " ms timeout"
                             : std::strerror(error);
    if (now_ms() >= deadline_ms) {
      break;
    }
  }
  throw RedisFailure(why);
}

// `args` as a Redis request (an array of bulk strings, binary-safe).
std::string encoded(const std::vector<std::string_view>& args)
{
  std::size_t size = 16;
  for (std::string_view arg : args) {
    size += arg.size() + 24;
  }
  std::string out;
  out.reserve(size);
  out += "*" + std::to_string(args.size()) + "\r\n";
  for (std::string_view arg : args) {
    out += "$" + std::to_string(arg.size()) + "\r\n";
    out += arg;
    out += "\r\n";
  }
  return out;
}

} // namespace

std::int64_t now_ms() noexcept
{
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct RedisClient::Connection {
  redisContext* context = nullptr;
  ~Connection()
  {
    if (context != nullptr) {
      // hiredis 0.14 closes only descriptors above 0 (a host with stdin closed), 1.x any but -1:
      // descriptor 0 is taken from it and closed here, once, whichever version runs.
      const bool on_stdin = context->fd == 0;
      if (on_stdin) {
        context->fd = -1;
      }
      hiredis().free_context(context);
      if (on_stdin) {
        ::close(0);
      }
    }
  }
};

RedisClient::RedisClient(RedisUrl url) : m_url(std::move(url)) {}

RedisClient::~RedisClient() = default;

void RedisClient::connect()
{
  const Hiredis& api = hiredis();
  if (!api.library) {
    throw RedisFailure("cannot load hiredis (install libhiredis): " + api.error);
  }
  util::UniqueFd fd = connect_socket(m_url);
  auto connection = std::make_unique<Connection>();
  connection->context = api.connect_fd(fd.get());
  if (connection->context == nullptr) {
    throw RedisFailure("cannot allocate a connection");  // the socket is closed by `fd`
  }
  std::ignore = fd.release();  // the context's now
  if (connection->context->err != 0) {
    throw RedisFailure(connection->context->errstr);
  }
  api.set_timeout(connection->context, timeval_of(k_io_timeout_ms));
  m_connection = std::move(connection);
  const auto expect_ok = [this](const std::vector<std::string_view>& args, const char* what) {
    const Reply reply = command(args);
    if (reply.kind == Reply::Kind::error || reply.kind == Reply::Kind::too_large) {
      m_connection.reset();
      throw RedisFailure(std::string(what) + " refused: " + (reply.kind == Reply::Kind::error ? reply.text : "an oversized reply"));
    }
  };
  if (!m_url.password.empty()) {
    if (m_url.user.empty()) {
      expect_ok({"AUTH", m_url.password}, "AUTH");
    } else {
      expect_ok({"AUTH", m_url.user, m_url.password}, "AUTH");
    }
  }
  if (m_url.db != 0) {
    expect_ok({"SELECT", std::to_string(m_url.db)}, "SELECT");
  }
}

void RedisClient::drop(const std::string& why)
{
  m_connection.reset();  // hiredis can't use a context after an I/O error
  throw RedisFailure(why.empty() ? "no reply" : why);
}

void RedisClient::send(const std::vector<std::string_view>& args, std::int64_t deadline_ms)
{
  // Written here with MSG_NOSIGNAL, not by hiredis (redisBufferWrite): its write() into a
  // connection the server closed since the last command (a restart, its idle timeout) raised
  // SIGPIPE, which ends a host that keeps the default action, once a request took two writes.
  const std::string request = encoded(args);
  const int fd = m_connection->context->fd;
  for (std::size_t done = 0; done < request.size();) {
    // Each wait is for what is left of the command's time, no longer.
    pollfd ready{fd, POLLOUT, 0};
    const std::int64_t left = deadline_ms - now_ms();
    const int polled = left > 0 ? ::poll(&ready, 1, static_cast<int>(left)) : 0;
    if (polled == 0) {
      drop(timed_out("cannot send ", args.front()));
    }
    if (polled < 0 && errno != EINTR) {
      drop(std::strerror(errno));
    }
    const ssize_t sent = polled > 0 ? ::send(fd, request.data() + done, request.size() - done, MSG_NOSIGNAL | MSG_DONTWAIT) : 0;
    if (sent < 0 && errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK) {
      drop(std::strerror(errno));
    }
    done += sent > 0 ? static_cast<std::size_t>(sent) : 0;
  }
}

void* RedisClient::receive(const std::vector<std::string_view>& args, std::int64_t command_deadline_ms, long long& declared)
{
  const Hiredis& api = hiredis();
  redisContext* context = m_connection->context;
  for (;;) {
    void* reply = nullptr;
    if (api.reply_from_reader(context, &reply) != REDIS_OK) {
      drop(context->errstr);  // not the protocol
    }
    if (reply != nullptr) {
      return reply;
    }
    const redisReader& reader = *context->reader;
    if (reader.ridx > 0) {
      // Inside an array (its elements are being read): no command kjit sends is answered with
      // one, and its elements, each parsed as it comes, would pass the size checks below while
      // each cost ≈ 60 bytes here.
      drop("the server answered " + std::string(args.front()) + " with an array, which no Redis does; not read");
    }
    const std::size_t pending = reader.len - reader.pos;
    declared = std::max(declared, declared_length(reader.buf + reader.pos, pending));
    if (pending > k_max_reply_bytes || declared > static_cast<long long>(k_max_reply_bytes)) {
      m_connection.reset();  // the rest is never read
      return nullptr;
    }
    const std::int64_t deadline_ms = command_deadline_ms + transfer_ms(declared);  // a large value's time
    // Waits for what is left of the command's time: a server trickling a byte at a time does not
    // restart it (the socket's own timeout would, on each read).
    pollfd ready{context->fd, POLLIN, 0};
    const std::int64_t left = deadline_ms - now_ms();
    const int polled = left > 0 ? ::poll(&ready, 1, static_cast<int>(left)) : 0;
    if (polled == 0) {
      drop(timed_out("no answer to ", args.front()));  // hiredis would say only "Resource temporarily unavailable"
    }
    if (polled < 0 && errno != EINTR) {
      drop(std::strerror(errno));
    }
    if (polled > 0 && api.buffer_read(context) != REDIS_OK) {
      drop(context->errstr);
    }
  }
}

Reply RedisClient::command(const std::vector<std::string_view>& args)
{
  if (!m_connection) {
    connect();
  }
  long long request_bytes = 0;
  for (std::string_view arg : args) {
    request_bytes += static_cast<long long>(arg.size());
  }
  const std::int64_t deadline_ms = now_ms() + k_io_timeout_ms + transfer_ms(request_bytes);
  send(args, deadline_ms);
  long long declared = -1;
  auto* raw = static_cast<redisReply*>(receive(args, deadline_ms, declared));
  if (raw == nullptr) {
    Reply reply;
    reply.kind = Reply::Kind::too_large;
    reply.integer = std::max(declared, 0LL);
    return reply;
  }
  Reply reply;
  switch (raw->type) {
  case REDIS_REPLY_NIL: reply.kind = Reply::Kind::nil; break;
  case REDIS_REPLY_STRING: reply.kind = Reply::Kind::string; break;
  case REDIS_REPLY_STATUS: reply.kind = Reply::Kind::status; break;
  case REDIS_REPLY_ERROR: reply.kind = Reply::Kind::error; break;
  case REDIS_REPLY_INTEGER: reply.kind = Reply::Kind::integer; break;
  default: reply.kind = Reply::Kind::other;
  }
  if (raw->type == REDIS_REPLY_STRING || raw->type == REDIS_REPLY_STATUS || raw->type == REDIS_REPLY_ERROR) {
    reply.text.assign(raw->str, raw->len);
  }
  reply.integer = raw->integer;
  hiredis().free_reply(raw);
  return reply;
}

} // namespace kjit::remote
