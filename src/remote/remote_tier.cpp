// RemoteTier: GETs on the caller's thread, SETs on one upload thread, one warning per outage.
#include "remote/remote_tier.hpp"

#include "config/log.hpp"
#include "remote/redis.hpp"
#include "store/record.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

namespace kjit::remote {

namespace {

std::int64_t now_ms()
{
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

} // namespace

std::string redis_key(const util::Sha256& key)
{
  return "kjit:v" + std::to_string(store::k_record_format) + ":" + util::to_hex(key.data(), key.size());
}

struct RemoteTier::State {
  explicit State(const RedisUrl& u) : url(u), name("remote " + u.display()), reader(u) {}

  RedisUrl url;
  std::string name;
  std::atomic<std::int64_t> closed_until{0};  // the circuit breaker: no request before this time
  std::atomic<bool> warned{false};            // this outage was reported

  std::mutex read_mutex;
  RedisClient reader;

  std::mutex queue_mutex;
  std::condition_variable queue_changed;
  std::deque<std::pair<std::string, std::string>> queue;  // (redis key, record)
  bool stopping = false;
  bool write_warned = false;
  std::thread writer;

  bool circuit_open() const { return now_ms() < closed_until.load(); }

  // After a failure: stop asking for k_breaker_ms, and say so once per outage.
  void fail(const std::string& why)
  {
    closed_until.store(now_ms() + k_breaker_ms);
    if (!warned.exchange(true)) {
      log::line("warning: " + name + ": " + why + "; lookups compile locally, the server is asked again in " +
                std::to_string(k_breaker_ms / 1000) + " s");
    }
  }

  void write_loop()
  {
    RedisClient client(url);
    std::unique_lock lock(queue_mutex);
    for (;;) {
      queue_changed.wait(lock, [this] { return stopping || !queue.empty(); });
      if (queue.empty()) {
        return;
      }
      auto [key, record] = std::move(queue.front());
      queue.pop_front();
      lock.unlock();
      if (!circuit_open()) {
        try {
          // Overwrites: a value there is either as good (same key, same inputs) or damaged.
          const Reply reply = client.command({"SET", key, record});
          if (reply.kind == Reply::Kind::error) {
            std::lock_guard warn_lock(queue_mutex);
            if (!std::exchange(write_warned, true)) {
              log::line("warning: " + name + " refused an upload: " + reply.text + " (kernels are still cached locally)");
            }
          }
        } catch (const RedisFailure& e) {
          fail(e.what());
        }
      }
      lock.lock();
    }
  }
};

RemoteTier::RemoteTier(const RedisUrl& url) : m_state(std::make_unique<State>(url)) {}

RemoteTier::~RemoteTier()
{
  {
    std::lock_guard lock(m_state->queue_mutex);
    m_state->stopping = true;
  }
  m_state->queue_changed.notify_all();
  if (m_state->writer.joinable()) {
    m_state->writer.join();
  }
}

const std::string& RemoteTier::name() const noexcept
{
  return m_state->name;
}

cache::TierAnswer RemoteTier::get(const util::Sha256& key) noexcept
{
  cache::TierAnswer answer;
  answer.kind = cache::TierAnswer::Kind::failure;
  if (m_state->circuit_open()) {
    answer.why = "not asked (the server failed less than " + std::to_string(k_breaker_ms / 1000) + " s ago)";
    return answer;
  }
  try {
    const std::string name = redis_key(key);
    std::lock_guard lock(m_state->read_mutex);
    Reply reply = m_state->reader.command({"GET", name});
    if (reply.kind == Reply::Kind::error) {
      m_state->fail("the server refused a lookup: " + reply.text);
      answer.why = reply.text;
      return answer;
    }
    m_state->warned.store(false);  // answered: a later outage is reported again
    if (reply.kind == Reply::Kind::string) {
      answer.kind = cache::TierAnswer::Kind::record;
      answer.bytes = std::move(reply.text);
    } else {
      answer.kind = cache::TierAnswer::Kind::none;
    }
  } catch (const std::exception& e) {
    m_state->fail(e.what());
    answer.why = e.what();
  }
  return answer;
}

void RemoteTier::upload(const util::Sha256& key, std::string record) noexcept
{
  if (m_state->url.readonly || record.size() > k_max_upload_bytes || m_state->circuit_open()) {
    return;
  }
  try {
    std::lock_guard lock(m_state->queue_mutex);
    if (m_state->stopping || m_state->queue.size() >= k_max_queued) {
      return;
    }
    if (!m_state->writer.joinable()) {
      m_state->writer = std::thread([state = m_state.get()] { state->write_loop(); });
    }
    m_state->queue.emplace_back(redis_key(key), std::move(record));
  } catch (const std::exception&) {
    return;  // no thread or no memory: the record stays local only
  }
  m_state->queue_changed.notify_one();
}

} // namespace kjit::remote
