// See manifest_head.hpp.
#include "deps/manifest_head.hpp"

#include "util/text.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>

namespace kjit::deps {

namespace {

constexpr std::string_view k_magic = "kjit-manifest-head 1";
std::atomic<std::uint64_t> g_heads_decoded{0};

// The content an entry read at each path (the first header of that path).
std::map<std::string_view, const util::Sha256*> read_by_path(const Resolution& entry)
{
  std::map<std::string_view, const util::Sha256*> read;
  for (const DiskHeader& header : entry.headers) {
    read.emplace(header.path, &header.hash);
  }
  return read;
}

// The rest of `line` after its first word and one space, if it starts with `word`.
std::optional<std::string_view> after(std::string_view line, std::string_view word)
{
  if (line.size() <= word.size() || line.compare(0, word.size(), word) != 0 || line[word.size()] != ' ') {
    return std::nullopt;
  }
  return line.substr(word.size() + 1);
}

} // namespace

std::string encode_manifest_head(const Manifest& manifest, const std::string& context, const LetGo& let_go,
                                 const util::Checksum& row)
{
  std::string body = "row " + util::to_hex(row) + "\n";
  Resolution newest = manifest.front();
  for (ProbedDir& dir : newest.dirs) {
    if (dir.whole) {
      dir.absent = AbsentNames();  // any change of it is one: its names are never asked (folder_changed())
    } else if (util::escape_line(dir.absent).size() > k_head_absent_bytes) {
      body += "elided " + util::escape_line(dir.path) + "\n";
      dir.absent = AbsentNames();
    }
  }
  const auto newest_read = read_by_path(newest);
  for (std::size_t i = 1; i < manifest.size(); ++i) {
    const auto read = read_by_path(manifest[i]);
    std::string lines;
    std::size_t listed = 0;
    for (const auto& [path, hash] : newest_read) {
      const auto it = read.find(path);
      if (it == read.end()) {
        lines += "lacks " + util::escape_line(path) + "\n";
      } else if (*it->second != *hash) {
        lines += "read " + util::to_hex(*it->second) + " " + util::escape_line(path) + "\n";
      } else {
        continue;
      }
      if (++listed > k_head_other_headers) {
        break;
      }
    }
    body += listed > k_head_other_headers ? "other-many\n" : "other\n" + lines;
  }
  body += "newest\n" + encode_manifest({newest}, context, let_go);
  return std::string(k_magic) + " " + util::to_hex(util::checksum(body)) + "\n" + body;
}

std::optional<ManifestHead> decode_manifest_head(std::string_view text, const std::string& context,
                                                 const util::Checksum& row)
{
  const std::size_t first = text.find('\n');
  if (first == std::string_view::npos || text.compare(0, k_magic.size(), k_magic) != 0 || first <= k_magic.size() ||
      text[k_magic.size()] != ' ') {
    return std::nullopt;
  }
  const std::string_view body = text.substr(first + 1);
  if (text.substr(k_magic.size() + 1, first - k_magic.size() - 1) != util::to_hex(util::checksum(body))) {
    return std::nullopt;
  }
  ManifestHead head;
  bool have_row = false;
  for (std::size_t at = 0; at < body.size();) {
    const std::size_t end = std::min(body.find('\n', at), body.size());
    const std::string_view line = body.substr(at, end - at);
    at = end + 1;
    if (line == "newest") {
      auto manifest = decode_manifest(body.substr(at), context, &head.let_go);
      if (!have_row || !manifest || manifest->size() != 1) {
        return std::nullopt;
      }
      head.newest = std::move(manifest->front());
      g_heads_decoded.fetch_add(1, std::memory_order_relaxed);
      return head;
    }
    if (const auto hex = after(line, "row")) {
      if (*hex != util::to_hex(row)) {
        return std::nullopt;
      }
      have_row = true;
    } else if (const auto path = after(line, "elided")) {
      head.elided_dirs.insert(util::unescape_line(*path));
    } else if (line == "other" || line == "other-many") {
      head.others.emplace_back().many = line == "other-many";
    } else if (const auto lacked = after(line, "lacks"); lacked && !head.others.empty()) {
      head.others.back().lacks.insert(util::unescape_line(*lacked));
    } else if (const auto read = after(line, "read"); read && !head.others.empty() && read->size() > 65) {
      util::Sha256 hash{};
      if (!util::from_hex(read->substr(0, 64), hash) || (*read)[64] != ' ') {
        return std::nullopt;
      }
      head.others.back().read_otherwise.emplace(util::unescape_line(read->substr(65)), hash);
    } else {
      return std::nullopt;
    }
  }
  return std::nullopt;  // no "newest"
}

std::uint64_t manifest_heads_decoded() noexcept
{
  return g_heads_decoded.load(std::memory_order_relaxed);
}

bool others_read_otherwise(const ManifestHead& head, const std::string& path, const std::optional<util::Sha256>& now)
{
  const auto newest = std::find_if(head.newest.headers.begin(), head.newest.headers.end(),
                                   [&](const DiskHeader& header) { return header.path == path; });
  if (newest == head.newest.headers.end()) {
    return false;
  }
  return std::all_of(head.others.begin(), head.others.end(), [&](const OtherEntry& other) {
    if (other.many || other.lacks.count(path) != 0) {
      return false;
    }
    const auto read = other.read_otherwise.find(path);
    const util::Sha256& hash = read != other.read_otherwise.end() ? read->second : newest->hash;
    return !now || hash != *now;
  });
}

} // namespace kjit::deps
