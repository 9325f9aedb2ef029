// The remote servers' health for kjit doctor: PING (reach, AUTH), INFO (version, role, memory policy).
#include "remote/server_check.hpp"

#include "remote/redis.hpp"

#include <kjit/error.hpp>

namespace kjit::remote {

namespace {

using Status = HealthCheck::Status;

// The value of `field` in an INFO answer ("field:value\r\n" lines), "" when absent.
std::string info_field(const std::string& info, const std::string& field)
{
  const std::string prefix = field + ":";
  for (std::size_t at = 0; at < info.size();) {
    const std::size_t end = std::min(info.find('\n', at), info.size());
    if (info.compare(at, prefix.size(), prefix) == 0) {
      std::string value = info.substr(at + prefix.size(), end - at - prefix.size());
      if (!value.empty() && value.back() == '\r') {
        value.pop_back();
      }
      return value;
    }
    at = end + 1;
  }
  return {};
}

HealthCheck check_one(const RedisUrl& url)
{
  HealthCheck check{Status::ok, "remote", url.display() + ": "};
  try {
    RedisClient client(url);
    const Reply pong = client.command({"PING"});
    if (pong.kind == Reply::Kind::error) {
      check.status = Status::error;
      check.detail += "PING refused: " + pong.text;
      return check;
    }
    const Reply info = client.command({"INFO"});
    const std::string auth = url.password.empty() ? "" : ", AUTH accepted";
    if (info.kind != Reply::Kind::string) {
      check.detail += "reachable" + auth + ", version unknown (INFO refused: " + info.text + ")";
    } else {
      check.detail += "Redis " + info_field(info.text, "redis_version") + auth;
      if (info_field(info.text, "role") == "slave" && !url.readonly) {
        check.status = Status::warning;
        check.detail += ", a replica (it refuses uploads: add ?readonly or name the primary)";
      }
      const std::string maxmemory = info_field(info.text, "maxmemory");
      const std::string policy = info_field(info.text, "maxmemory_policy");
      if (maxmemory.empty() || maxmemory == "0") {
        check.detail += ", no maxmemory (it grows without bound; docs/remote.md)";
      } else {
        check.detail += ", maxmemory " + maxmemory + " bytes, " + policy;
        if (policy == "noeviction" && !url.readonly) {
          check.status = Status::warning;
          check.detail += " (when full it refuses uploads: use allkeys-lru)";
        }
      }
    }
    check.detail += url.readonly ? ", read-only (?readonly: lookups only)" : ", read-write";
  } catch (const std::exception& e) {
    check.status = Status::error;
    check.detail += std::string(e.what()) + " (lookups compile locally while it fails)";
  }
  return check;
}

} // namespace

std::vector<HealthCheck> check_servers(const Config& config)
{
  std::vector<HealthCheck> out;
  if (config.remote_cache.empty()) {
    return out;
  }
  try {
    std::string why;
    const std::vector<RedisUrl> urls = configured_urls(config, why);
    if (urls.empty()) {
      out.push_back({Status::error, "remote", why + " (the remote cache is not used)"});
    }
    for (const RedisUrl& url : urls) {
      out.push_back(check_one(url));
    }
  } catch (const Error& e) {
    out.push_back({Status::error, "remote", e.what()});
  }
  return out;
}

} // namespace kjit::remote
