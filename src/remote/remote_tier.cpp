// RemoteTier: each key's requests go to the server that rendezvous hashing picks for it.
#include "remote/remote_tier.hpp"

#include "config/log.hpp"
#include "remote/server.hpp"
#include "store/record.hpp"
#include "util/no_cancellation.hpp"

static_assert(kjit::remote::k_max_upload_bytes < kjit::remote::k_max_reply_bytes, "an uploaded record must be readable");

namespace kjit::remote {

namespace {

std::string key_name(const char* prefix, const util::Sha256& key)
{
  return prefix + std::to_string(store::k_record_format) + ":" + util::to_hex(key.data(), key.size());
}

std::string meta_key(const std::string& name)
{
  return "kjit:meta:" + name;
}

// What picks the server of a meta row: its name's checksum (any node finds it on the same one).
std::string meta_digest(const std::string& name)
{
  const util::Checksum sum = util::checksum(name);
  return std::string(reinterpret_cast<const char*>(sum.data()), sum.size());
}

} // namespace

std::string record_name(const util::Sha256& key)
{
  return key_name("kjit:v", key);
}

std::string lease_name(const util::Sha256& key)
{
  return key_name("kjit:lease:v", key);
}

RemoteTier::RemoteTier(std::vector<RedisUrl> urls)
{
  m_name = "remote";
  for (RedisUrl& url : urls) {
    m_name += " " + url.display();
    m_servers.push_back(std::make_unique<Server>(std::move(url)));
  }
}

RemoteTier::~RemoteTier() = default;  // each Server writes its queue

const std::string& RemoteTier::name() const noexcept
{
  return m_name;
}

Server& RemoteTier::pick(const util::Sha256& key) const noexcept
{
  return pick(std::string_view(reinterpret_cast<const char*>(key.data()), key.size()));
}

Server& RemoteTier::pick(std::string_view digest) const noexcept
{
  // Rendezvous (highest random weight) hashing: adding or removing a server moves only the keys
  // it wins or held. The weight names the server by host:port/db, never by its password.
  Server* best = m_servers.front().get();
  if (m_servers.size() > 1) {
    util::Checksum best_weight{};
    for (const auto& server : m_servers) {
      const util::Checksum weight = util::checksum(server->url().server() + "|" + std::string(digest));
      if (best_weight < weight) {
        best_weight = weight;
        best = server.get();
      }
    }
  }
  return *best;
}

const Server& RemoteTier::server_for(const util::Sha256& key) const noexcept
{
  return pick(key);
}

tier::TierAnswer RemoteTier::get(const util::Sha256& key) noexcept
{
  const util::NoCancellation no_cancellation;  // its warning's write()
  tier::TierAnswer answer;
  answer.kind = tier::TierAnswer::Kind::failure;
  answer.warned = true;  // the server warns once per outage, and once per key with a planted value
  try {
    Server& server = pick(key);
    const std::string name = record_name(key);
    std::optional<Reply> reply = server.ask({"GET", name}, answer.why, Server::OnError::fail_but_wrong_type);
    if (!reply) {
      return answer;
    }
    if (reply->kind == Reply::Kind::string) {
      answer.kind = tier::TierAnswer::Kind::record;
      answer.bytes = std::move(reply->text);
    } else if (reply->kind == Reply::Kind::too_large || reply->kind == Reply::Kind::error) {
      // Planted or damaged: no record is that large, or anything but a string. Not read; this key
      // only (the server answers the others), and the compile's upload replaces it.
      answer.why = reply->kind == Reply::Kind::error
                     ? "the value under " + name + " is not a string (" + reply->text + ")"
                     : "the value under " + name + " is over " + std::to_string(k_max_reply_bytes) + " bytes" +
                         (reply->integer > 0 ? " (" + std::to_string(reply->integer) + ")" : std::string()) +
                         ", more than a record can be; not read";
      std::lock_guard lock(m_warned_mutex);
      if (m_warned_keys.insert(key).second) {
        log::line("warning: " + server.name() + ": " + answer.why + ", treated as a miss");
      }
    } else {
      answer.kind = tier::TierAnswer::Kind::none;
    }
  } catch (const std::exception& e) {
    answer.why = e.what();  // no memory
  }
  return answer;
}

LeaseAnswer RemoteTier::lease(const util::Sha256& key, std::int64_t wait_ms)
{
  try {
    return acquire_lease(pick(key), record_name(key), lease_name(key), wait_ms);
  } catch (const std::exception&) {
    return {};
  }
}

const tier::TierAccounting& RemoteTier::accounting() const noexcept
{
  static const tier::TierAccounting accounting{Source::remote, &CacheStats::remote_hits, &CacheStats::remote_misses,
                                               &CacheStats::remote_errors, &CacheStats::remote_bytes_read};
  return accounting;
}

void RemoteTier::put(const util::Sha256& key, std::string record) noexcept
{
  Server& server = pick(key);
  if (server.url().readonly || record.size() > k_max_upload_bytes || server.circuit_open()) {
    return;
  }
  try {
    server.enqueue({record_name(key), std::move(record), std::string(), std::string()});
  } catch (const std::exception&) {
    // no memory: the record stays local
  }
}

std::optional<std::string> RemoteTier::get_meta(const std::string& name) noexcept
{
  const util::NoCancellation no_cancellation;  // a warning's write()
  try {
    const std::string key = meta_key(name);
    std::string why;
    const std::optional<Reply> reply =
      pick(meta_digest(name)).ask({"GET", key}, why, Server::OnError::fail_but_wrong_type);
    if (reply && reply->kind == Reply::Kind::string && reply->text.size() <= k_max_meta_bytes) {
      return reply->text;
    }
  } catch (const std::exception&) {
    // no memory: none
  }
  return std::nullopt;
}

void RemoteTier::put_meta(const std::string& name, std::string value) noexcept
{
  try {
    Server& server = pick(meta_digest(name));
    if (server.url().readonly || value.size() > k_max_meta_bytes || server.circuit_open()) {
      return;
    }
    server.enqueue(UploadItem{meta_key(name), std::move(value), std::string(), std::string()});
  } catch (const std::exception&) {
    // no memory: not shared; another node learns it the slow way
  }
}

void RemoteTier::flush() noexcept
{
  for (const auto& server : m_servers) {
    server->flush();
  }
}

std::uint64_t RemoteTier::bytes_written() const noexcept
{
  std::uint64_t total = 0;
  for (const auto& server : m_servers) {
    total += server->bytes_written();
  }
  return total;
}

} // namespace kjit::remote
