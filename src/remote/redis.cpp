// The hiredis calls the remote tier makes, through function pointers bound after dlopen.
#include "remote/redis.hpp"

#include "util/dynamic_library.hpp"

#include <hiredis/hiredis.h>

#include <cerrno>
#include <cstring>
#include <dlfcn.h>
#include <mutex>
#include <optional>

namespace kjit::remote {

namespace {

#define KJIT_STRINGIFY2(x) #x
#define KJIT_STRINGIFY(x) KJIT_STRINGIFY2(x)

struct Hiredis {
  std::optional<util::DynamicLibrary> library;
  std::string error;
  decltype(&::redisConnectWithTimeout) connect = nullptr;
  decltype(&::redisSetTimeout) set_timeout = nullptr;
  decltype(&::redisCommandArgv) command_argv = nullptr;
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
    if (h.library && !(h.library->bind(h.connect, "redisConnectWithTimeout") &&
                       h.library->bind(h.set_timeout, "redisSetTimeout") &&
                       h.library->bind(h.command_argv, "redisCommandArgv") &&
                       h.library->bind(h.free_reply, "freeReplyObject") && h.library->bind(h.free_context, "redisFree"))) {
      h.error = h.library->path() + " lacks a hiredis function";
      h.library.reset();
    }
    return loaded;
  }();
  return *api;
}

timeval timeval_of(int ms)
{
  return timeval{ms / 1000, (ms % 1000) * 1000};
}

} // namespace

struct RedisClient::Connection {
  redisContext* context = nullptr;
  ~Connection()
  {
    if (context != nullptr) {
      hiredis().free_context(context);
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
  auto connection = std::make_unique<Connection>();
  connection->context = api.connect(m_url.host.c_str(), m_url.port, timeval_of(k_connect_timeout_ms));
  if (connection->context == nullptr || connection->context->err != 0) {
    throw RedisFailure(connection->context == nullptr ? "cannot allocate a connection" : connection->context->errstr);
  }
  api.set_timeout(connection->context, timeval_of(k_io_timeout_ms));
  m_connection = std::move(connection);
  const auto expect_ok = [this](const std::vector<std::string_view>& args, const char* what) {
    const Reply reply = command(args);
    if (reply.kind == Reply::Kind::error) {
      m_connection.reset();
      throw RedisFailure(std::string(what) + " refused: " + reply.text);
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

Reply RedisClient::command(const std::vector<std::string_view>& args)
{
  if (!m_connection) {
    connect();
  }
  std::vector<const char*> argv;
  std::vector<std::size_t> lengths;
  for (std::string_view arg : args) {
    argv.push_back(arg.data());
    lengths.push_back(arg.size());
  }
  auto* raw = static_cast<redisReply*>(
    hiredis().command_argv(m_connection->context, static_cast<int>(argv.size()), argv.data(), lengths.data()));
  if (raw == nullptr) {
    std::string why = m_connection->context->errstr;
    if (m_connection->context->err == REDIS_ERR_IO && why == std::strerror(EAGAIN)) {
      why = "no answer to " + std::string(args.front()) + " within the " + std::to_string(k_io_timeout_ms) +
            " ms timeout";  // hiredis says only "Resource temporarily unavailable"
    }
    m_connection.reset();  // hiredis can't use a context after an I/O error
    throw RedisFailure(why.empty() ? "no reply" : why);
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
