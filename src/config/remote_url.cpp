// Parsing of redis:// URLs for the remote tier; every bad part is a ConfigError naming the variable.
#include "config/remote_url.hpp"

#include <kjit/config.hpp>
#include <kjit/error.hpp>

#include "util/file.hpp"

#include <algorithm>
#include <cctype>
#include <set>

namespace kjit::remote {

namespace {

// A decimal number in [low, high], or -1.
long number_in(std::string_view text, long low, long high)
{
  if (text.empty() || text.size() > 6 ||
      !std::all_of(text.begin(), text.end(), [](unsigned char ch) { return std::isdigit(ch) != 0; })) {
    return -1;
  }
  const long value = std::stol(std::string(text));
  return value >= low && value <= high ? value : -1;
}

// `text` with each %XX (two hex digits) replaced by its byte; any other '%' is kept as written.
std::string percent_decoded(std::string_view text)
{
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() && std::isxdigit(static_cast<unsigned char>(text[i + 1])) != 0 &&
        std::isxdigit(static_cast<unsigned char>(text[i + 2])) != 0) {
      out += static_cast<char>(std::stoi(std::string(text.substr(i + 1, 2)), nullptr, 16));
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

} // namespace

std::string RedisUrl::server() const
{
  return host + ":" + std::to_string(port) + "/" + std::to_string(db);
}

std::string RedisUrl::display() const
{
  std::string out = "redis://";
  if (!user.empty() || !password.empty()) {
    out += user + (password.empty() ? "" : ":***") + "@";
  }
  // An IPv6 address in brackets, as the URL is written: "::1:6379" reads as a host named "::1:6379".
  // (server() stays as it is: it names the server in the key placement every node computes.)
  out += host.find(':') == std::string::npos ? server() : "[" + host + "]" + server().substr(host.size());
  return readonly ? out + "?readonly" : out;
}

RedisUrl parse_url(std::string_view text, const std::string& variable)
{
  const auto fail = [&](const std::string& why) {
    return ConfigError(variable, why + " (expected redis://[user:password@]host:port[/db][?readonly])");
  };
  constexpr std::string_view k_scheme = "redis://";
  if (text.substr(0, k_scheme.size()) != k_scheme) {
    throw fail("not a redis:// URL");
  }
  std::string_view rest = text.substr(k_scheme.size());
  RedisUrl url;
  // The credentials first, up to the last '@' (host, port, db and query hold none), so a password
  // may hold '?', '/', ':' or '@'; percent-encoded (%40 for '@', %2C for ',') as in other clients. No message quotes a part of the URL: a ',' or a space in a
  // password splits the list inside it, and the piece before would be quoted as a port.
  if (const auto at = rest.rfind('@'); at != std::string_view::npos) {
    const std::string_view credentials = rest.substr(0, at);
    const auto colon = credentials.find(':');
    url.user = percent_decoded(credentials.substr(0, colon));
    url.password = colon == std::string_view::npos ? "" : percent_decoded(credentials.substr(colon + 1));
    if (url.password.empty()) {
      throw fail("credentials without a password");
    }
    rest = rest.substr(at + 1);
  }
  if (const auto query = rest.find('?'); query != std::string_view::npos) {
    if (rest.substr(query + 1) != "readonly") {
      throw fail("an unknown option after '?'");
    }
    url.readonly = true;
    rest = rest.substr(0, query);
  }
  if (const auto slash = rest.find('/'); slash != std::string_view::npos) {
    const long db = number_in(rest.substr(slash + 1), 0, 65535);
    if (db < 0) {
      throw fail("the database after '/' is not a number");
    }
    url.db = static_cast<int>(db);
    rest = rest.substr(0, slash);
  }
  // An IPv6 address in brackets, as in any URL: the brackets are not part of the name.
  const bool bracketed = !rest.empty() && rest.front() == '[';
  const auto colon = bracketed ? rest.find("]:") + 1 : rest.rfind(':');
  if (colon == std::string_view::npos || (bracketed && colon == 0)) {
    throw fail(bracketed && rest.find(']') == std::string_view::npos ? "an IPv6 address without its ']'" : "no port");
  }
  url.host = std::string(bracketed ? rest.substr(1, colon - 2) : rest.substr(0, colon));
  const long port = number_in(rest.substr(colon + 1), 1, 65535);
  if (url.host.empty()) {
    throw fail("no host");
  }
  if (url.host.find_first_of("[]") != std::string::npos) {
    throw fail("a '[' or ']' that does not enclose an IPv6 address");
  }
  if (port < 0) {
    throw fail("the port is not a number in 1..65535");
  }
  url.port = static_cast<int>(port);
  return url;
}

std::vector<RedisUrl> parse_urls(std::string_view text, const std::string& variable)
{
  std::vector<RedisUrl> urls;
  std::set<std::string> servers;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t end = std::min(text.find_first_of(" \t\n,", at), text.size());
    if (end > at) {
      RedisUrl url = parse_url(text.substr(at, end - at), variable);
      if (!servers.insert(url.server()).second) {
        throw ConfigError(variable, "the server " + url.display() + " is listed twice");
      }
      urls.push_back(std::move(url));
    }
    at = end + 1;
  }
  if (urls.empty()) {
    throw ConfigError(variable, "no redis:// URL in the list");
  }
  return urls;
}

std::vector<RedisUrl> configured_urls(const Config& config, std::string& why)
{
  std::vector<RedisUrl> urls = parse_urls(config.remote_cache, "KJIT_REMOTE_CACHE");
  if (config.remote_password_file.empty()) {
    return urls;
  }
  std::error_code error;
  const std::optional<std::string> text = util::read_file(config.remote_password_file, error);
  const std::string password = text ? text->substr(0, text->find_first_of("\r\n")) : std::string();
  if (password.empty()) {
    why = "cannot read a password from KJIT_REMOTE_PASSWORD_FILE " + config.remote_password_file + ": " +
          (text ? std::string("its first line is empty") : error.message());
    return {};
  }
  for (RedisUrl& url : urls) {
    if (url.password.empty()) {
      url.password = password;
    }
  }
  return urls;
}

} // namespace kjit::remote
