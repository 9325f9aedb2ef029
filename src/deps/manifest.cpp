// Manifest encoding and validation.
#include "deps/manifest.hpp"

#include "util/file.hpp"
#include "util/text.hpp"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstring>
#include <map>
#include <sys/stat.h>

namespace kjit::deps {

namespace {

// 3: a header's "spelled" line (the name a binary naming files gives it). 4: the device in each
// stamp (an inode number names a file on one filesystem only). 5: a folder's absent names. 6: an
// entry's closure lines (ClosureState); a manifest of format 5 reads as one without them.
// 7: "absent-same", a folder's absent names as the same folder's in the entry before (an edited
// header's entries probe the same folders: a vendored CCCL's 2.4 MB of names are written, and
// decoded on every hit, once, not once per entry).
// 8: the states let go (LetGo: "let-go", "gone", "gone-header" before the first entry); a manifest
// of format 7 or before reads as one that may have let any state go.
constexpr const char* k_magic = "kjit-manifest 8";
constexpr const char* k_magic_without_let_go = "kjit-manifest 7";
constexpr const char* k_magic_without_absent_same = "kjit-manifest 6";
constexpr const char* k_magic_without_closures = "kjit-manifest 5";
std::atomic<std::uint64_t> g_decoded{0};
std::atomic<std::uint64_t> g_entries_decoded{0};

// The line of `text` that starts at `at` (without its '\n'), moving `at` past it; false at the end.
bool next_line(std::string_view text, std::size_t& at, std::string_view& line)
{
  if (at >= text.size()) {
    return false;
  }
  std::size_t end = text.find('\n', at);
  if (end == std::string_view::npos) {
    end = text.size();
  }
  line = text.substr(at, end - at);
  at = end + 1;
  return true;
}

// Where in `text`, from `from`, the '\n' is that ends the line before one starting with `start`
// ("entry" stands for the whole line "entry"); npos if none. memmem(): a '\n' starts every
// line, and std::string_view::find() stopped at each.
std::size_t find_line(std::string_view text, std::size_t from, std::string_view start)
{
  const std::string needle = "\n" + std::string(start) + (start == "entry" ? "\n" : "");
  if (from >= text.size()) {
    return std::string_view::npos;
  }
  const void* at = ::memmem(text.data() + from, text.size() - from, needle.data(), needle.size());
  return at == nullptr ? std::string_view::npos : static_cast<std::size_t>(static_cast<const char*>(at) - text.data());
}

// A line's words, separated by spaces, one by one.
class Words {
public:
  explicit Words(std::string_view line) : m_rest(line) {}
  // The next word; empty when there is none.
  std::string_view next()
  {
    const std::size_t start = std::min(m_rest.find_first_not_of(' '), m_rest.size());
    const std::size_t end = std::min(m_rest.find(' ', start), m_rest.size());
    const std::string_view word = m_rest.substr(start, end - start);
    m_rest.remove_prefix(end);
    return word;
  }
  // The next word as a whole decimal number.
  template <class Number>
  bool number(Number& out)
  {
    const std::string_view word = next();
    const auto [end, error] = std::from_chars(word.data(), word.data() + word.size(), out);
    return !word.empty() && error == std::errc() && end == word.data() + word.size();
  }

private:
  std::string_view m_rest;
};

std::string stamp_text(const FileStamp& stamp)
{
  return std::to_string(stamp.exists ? 1 : 0) + " " + std::to_string(stamp.size) + " " +
         std::to_string(stamp.mtime_ns) + " " + std::to_string(stamp.ctime_ns) + " " + std::to_string(stamp.inode) + " " +
         std::to_string(stamp.device);
}

} // namespace

std::string encode_manifest(const Manifest& manifest, const std::string& context, const LetGo& let_go)
{
  std::string body = "context " + util::escape_line(context) + "\n";
  if (let_go.tracked) {
    body += "let-go\n";
  }
  for (const LetGoState& state : let_go.states) {
    body += "gone\n";
    for (const auto& [path, hash] : state.headers) {
      body += "gone-header " + util::to_hex(hash) + " " + util::escape_line(path) + "\n";
    }
  }
  const Resolution* before = nullptr;
  for (const Resolution& entry : manifest) {
    // The absent names of the entry before, by folder.
    std::map<std::string_view, const AbsentNames*> absent_before;
    if (before != nullptr) {
      for (const ProbedDir& dir : before->dirs) {
        absent_before.emplace(dir.path, &dir.absent);
      }
    }
    before = &entry;
    body += "entry\n";
    for (const DiskHeader& header : entry.headers) {
      body += "header " + util::to_hex(header.hash) + " " + stamp_text(header.stamp) + "\n";
      body += "name " + util::escape_line(header.name) + "\n";
      body += "path " + util::escape_line(header.path) + "\n";
      if (!header.spelled.empty()) {
        body += "spelled " + util::escape_line(header.spelled) + "\n";
      }
    }
    for (const ProbedDir& dir : entry.dirs) {
      body += "dir " + stamp_text(dir.stamp) + "\n";
      body += "path " + util::escape_line(dir.path) + "\n";
      if (dir.whole) {
        body += "whole\n";
      }
      const auto same = absent_before.find(dir.path);
      if (dir.absent.empty()) {
      } else if (same != absent_before.end() && *same->second == dir.absent) {
        body += "absent-same\n";
      } else {
        body += "absent " + util::escape_line(dir.absent) + "\n";
      }
    }
    if (entry.closure) {
      const ClosureState& closure = *entry.closure;
      body += "seed " + util::to_hex(closure.seed_key) + "\n";
      for (const auto& dir : closure.computed_dirs) {
        body += "computed " + util::escape_line(dir) + "\n";
      }
      for (const auto& name : closure.climbing_names) {
        body += "climbing " + util::escape_line(name) + "\n";
      }
      if (closure.once_by_macro) {
        body += "once-by-macro\n";
      }
      if (closure.names_files) {
        body += "names-files\n";
      }
      if (!closure.two_names.empty()) {
        body += "two-names " + util::escape_line(closure.two_names) + "\n";
      }
      for (const auto& name : closure.include_macros) {
        body += "include-macro " + util::escape_line(name) + "\n";
      }
      if (closure.pastes) {
        body += "pastes\n";
      }
    }
  }
  return std::string(k_magic) + " " + util::to_hex(util::checksum(body)) + "\n" + body;
}

std::uint64_t manifests_decoded() noexcept
{
  return g_decoded.load(std::memory_order_relaxed);
}

std::uint64_t manifest_entries_decoded() noexcept
{
  return g_entries_decoded.load(std::memory_order_relaxed);
}

ManifestReader::ManifestReader(std::string_view bytes, const std::string& context)
{
  g_decoded.fetch_add(1, std::memory_order_relaxed);
  m_let_go.tracked = false;  // until its line says so (format 8)
  const auto first = bytes.find('\n');
  for (const char* known : {k_magic, k_magic_without_let_go, k_magic_without_absent_same, k_magic_without_closures}) {
    if (first != std::string_view::npos && bytes.substr(0, std::strlen(known)) == known) {
      m_magic = known;
    }
  }
  if (m_magic == nullptr) {
    return;
  }
  m_body = bytes.substr(first + 1);
  const std::size_t magic_size = std::strlen(m_magic);
  if (bytes.substr(magic_size + 1, first - magic_size - 1) != util::to_hex(util::checksum(m_body))) {
    return;
  }
  // Made in another resolution context (source folder, -I folders, pre-includes): not valid here.
  std::string_view line;
  if (!next_line(m_body, m_at, line) || line != "context " + util::escape_line(context)) {
    return;
  }
  // The states let go come before the first entry (format 8).
  for (std::size_t start = m_at; next_line(m_body, m_at, line); start = m_at) {
    Words words(line);
    const std::string_view kind = words.next();
    if (kind == "entry") {
      m_at = start;  // next() reads it
      break;
    }
    if (m_magic != k_magic) {
      return;
    }
    if (line == "let-go" && !m_let_go.tracked && m_let_go.states.empty()) {
      m_let_go.tracked = true;
    } else if (line == "gone") {
      m_let_go.states.emplace_back();
    } else if (kind == "gone-header" && !m_let_go.states.empty()) {
      std::pair<std::string, util::Sha256> header;
      const std::string_view hex = words.next();
      if (!util::from_hex(hex, header.second) || line.size() <= kind.size() + hex.size() + 2) {
        return;
      }
      header.first = util::unescape_line(line.substr(kind.size() + hex.size() + 2));
      m_let_go.states.back().headers.push_back(std::move(header));
    } else {
      return;
    }
  }
  m_first_entry = m_at;
  m_ok = true;
}

void ManifestReader::rewind()
{
  if (m_magic != nullptr && m_first_entry != 0) {
    m_at = m_first_entry;
    m_ok = true;
    m_absent.clear();
    m_absent_before.clear();
  }
}

std::optional<Resolution> ManifestReader::next()
{
  auto entry = read_entry(true);
  if (entry) {
    g_entries_decoded.fetch_add(1, std::memory_order_relaxed);
  }
  return entry;
}

bool ManifestReader::skip_changed(const std::vector<ChangedHeader>& changed)
{
  if (!m_ok || at_end() || changed.empty()) {
    return false;
  }
  // The entry's text: from its "entry" line to the next one (lines are escaped: no other line is
  // "entry"). A header is three lines, "header <sha256> <stamp>", "name …", "path …".
  const std::size_t next_entry = find_line(m_body, m_at, "entry");
  const std::string_view entry = m_body.substr(m_at, next_entry == std::string_view::npos ? std::string_view::npos : next_entry + 1 - m_at);
  const auto lists_other = [&](const ChangedHeader& header) {
    const std::string needle = "path " + util::escape_line(header.path) + "\n";
    for (std::size_t at = find_line(entry, 0, needle); at != std::string_view::npos; at = find_line(entry, at + 1, needle)) {
      const std::size_t name = entry.rfind('\n', at - 1);  // the "name" line's start, less one
      const std::size_t line = name == std::string_view::npos || name == 0 ? std::string_view::npos : entry.rfind('\n', name - 1);
      if (line == std::string_view::npos || entry.substr(name + 1, 5) != "name " ||
          entry.substr(line + 1, 7) != "header ") {
        continue;  // a folder's path, or not as written
      }
      util::Sha256 hash{};
      if (!util::from_hex(entry.substr(line + 8, hash.size() * 2), hash)) {
        return false;
      }
      return !header.now || hash != *header.now;
    }
    return false;
  };
  if (std::none_of(changed.begin(), changed.end(), lists_other)) {
    return false;
  }
  return pass_over();  // its folders are read: "absent-same" in the next names them
}

std::optional<Resolution> ManifestReader::read_entry(bool headers)
{
  if (!m_ok || at_end()) {
    return std::nullopt;
  }
  const auto damaged = [&] {
    m_ok = false;
    return std::nullopt;
  };
  std::string_view line;
  next_line(m_body, m_at, line);  // "entry": the constructor and each call stop before one
  if (!headers) {
    // Its folders alone, which come after its headers (a vendored CCCL's: 6 800 lines passed).
    const std::size_t end = find_line(m_body, m_at - 1, "entry");
    if (const std::size_t dir = find_line(m_body, m_at - 1, "dir "); dir < end) {
      m_at = dir + 1;
    } else {
      m_at = end == std::string_view::npos ? m_body.size() : end + 1;
    }
  }
  Resolution entry;
  m_absent_before = std::move(m_absent);
  m_absent.clear();
  const bool closures = m_magic != k_magic_without_closures;
  // Read in place, line by line: a vendored CCCL's manifest entry is 2.8 MB of text, which a warm
  // hit decodes; a copy of it, or a string stream per line, would be most of that hit's time.
  for (std::size_t start = m_at; next_line(m_body, m_at, line); start = m_at) {
    Words words(line);
    const std::string_view kind = words.next();
    if (kind == "entry") {
      m_at = start;  // the next entry's
      break;
    }
    if (kind == "absent-same") {
      // The same folder's names in the entry before (format 7).
      if (m_magic == k_magic_without_absent_same || m_magic == k_magic_without_closures || entry.dirs.empty() ||
          line != kind) {
        return damaged();
      }
      ProbedDir& dir = entry.dirs.back();
      // The first folder of that path in the entry before, as decode_manifest() always took it.
      const auto same = std::find_if(m_absent_before.begin(), m_absent_before.end(),
                                     [&](const auto& before) { return before.first == dir.path; });
      if (same == m_absent_before.end() || same->second.empty()) {
        return damaged();
      }
      dir.absent = same->second;  // shared, not decoded again
      m_absent.back().second = same->second;
      continue;
    }
    if (kind == "whole" || kind == "absent") {
      if (entry.dirs.empty() || (kind == "absent" && line.size() <= 7)) {
        return damaged();
      }
      if (kind == "whole") {
        entry.dirs.back().whole = true;
      } else {
        entry.dirs.back().absent = AbsentNames(util::unescape_line(line.substr(7)));
        m_absent.back().second = entry.dirs.back().absent;
      }
      continue;
    }
    if (kind == "seed") {
      const std::string_view hex = words.next();
      if (!closures || entry.closure || hex.empty()) {
        return damaged();
      }
      entry.closure.emplace();
      if (!util::from_hex(hex, entry.closure->seed_key)) {
        return damaged();
      }
      continue;
    }
    if (kind == "computed" || kind == "climbing" || kind == "once-by-macro" || kind == "names-files" ||
        kind == "two-names" || kind == "include-macro" || kind == "pastes") {
      if (!entry.closure) {
        return damaged();  // closure lines follow their entry's seed line
      }
      ClosureState& closure = *entry.closure;
      const std::string rest = line.size() > kind.size() + 1 ? util::unescape_line(line.substr(kind.size() + 1)) : std::string();
      if (kind == "computed") {
        closure.computed_dirs.insert(rest);
      } else if (kind == "climbing") {
        closure.climbing_names.insert(rest);
      } else if (kind == "once-by-macro") {
        closure.once_by_macro = true;
      } else if (kind == "names-files") {
        closure.names_files = true;
      } else if (kind == "include-macro") {
        closure.include_macros.insert(rest);
      } else if (kind == "pastes") {
        closure.pastes = true;
      } else {
        closure.two_names = rest;
      }
      continue;
    }
    if (kind == "spelled") {
      if (entry.headers.empty() || line.size() <= 8) {
        return damaged();
      }
      entry.headers.back().spelled = util::unescape_line(line.substr(8));
      continue;
    }
    FileStamp stamp;
    const std::string_view hex = kind == "header" ? words.next() : std::string_view();
    int exists = 0;
    if (!words.number(exists) || !words.number(stamp.size) || !words.number(stamp.mtime_ns) ||
        !words.number(stamp.ctime_ns) || !words.number(stamp.inode) || !words.number(stamp.device)) {
      return damaged();
    }
    stamp.exists = exists != 0;
    std::string_view name_line;
    std::string_view path_line;
    if (kind == "header") {
      DiskHeader header;
      if (!util::from_hex(hex, header.hash) || !next_line(m_body, m_at, name_line) || name_line.substr(0, 5) != "name " ||
          !next_line(m_body, m_at, path_line) || path_line.substr(0, 5) != "path ") {
        return damaged();
      }
      header.stamp = stamp;
      header.name = util::unescape_line(name_line.substr(5));
      header.path = util::unescape_line(path_line.substr(5));
      entry.headers.push_back(std::move(header));
    } else if (kind == "dir") {
      if (!next_line(m_body, m_at, path_line) || path_line.substr(0, 5) != "path ") {
        return damaged();
      }
      entry.dirs.push_back({util::unescape_line(path_line.substr(5)), stamp, false, {}});
      m_absent.emplace_back(entry.dirs.back().path, AbsentNames());
    } else {
      return damaged();
    }
  }
  return entry;
}

std::optional<Manifest> decode_manifest(std::string_view bytes, const std::string& context, LetGo* let_go)
{
  ManifestReader reader(bytes, context);
  Manifest manifest;
  while (auto entry = reader.next()) {
    manifest.push_back(std::move(*entry));
  }
  if (!reader.ok()) {
    return std::nullopt;
  }
  if (let_go != nullptr) {
    *let_go = reader.take_let_go();
  }
  return manifest;
}

void let_go_of_oldest(Manifest& manifest, LetGo& let_go)
{
  if (manifest.size() <= k_manifest_entries) {
    return;
  }
  std::map<std::string_view, const util::Sha256*> newest;
  for (const DiskHeader& header : manifest.front().headers) {
    newest.emplace(header.path, &header.hash);
  }
  while (manifest.size() > k_manifest_entries) {
    LetGoState state;
    for (const DiskHeader& header : manifest.back().headers) {
      if (const auto it = newest.find(header.path); it == newest.end() || *it->second != header.hash) {
        state.headers.emplace_back(header.path, header.hash);
      }
    }
    // The newest entry's very headers (a folder changed alone): it holds only where the newest
    // does, which is recorded when it goes. Kept as one of none, it could hold anything, and a full
    // manifest would be outdated for no edit after it (found by a review).
    const bool newests_headers = state.headers.empty() && manifest.back().headers.size() == newest.size();
    if (state.headers.size() > k_let_go_headers) {
      state.headers.clear();  // may hold whatever is on disk
    }
    if (!newests_headers) {
      keep_let_go_state(let_go, std::move(state), true);
    }
    manifest.pop_back();
  }
}

void keep_let_go_state(LetGo& let_go, LetGoState state, bool newest)
{
  if (std::find_if(let_go.states.begin(), let_go.states.end(),
                   [&](const LetGoState& kept) { return kept.headers == state.headers; }) != let_go.states.end()) {
    return;  // once (a row and a Cache's copy of it let the same states go)
  }
  let_go.states.insert(newest ? let_go.states.begin() : let_go.states.end(), std::move(state));
  if (let_go.states.size() > k_let_go_states) {
    let_go.states.resize(k_let_go_states);
    let_go.tracked = false;
  }
}

bool let_go_may_hold(const LetGo& let_go)
{
  if (!let_go.tracked) {
    return true;
  }
  std::map<std::string, std::optional<util::Sha256>> now;  // by path; nullopt: unreadable
  const auto content_now = [&](const std::string& path) -> const std::optional<util::Sha256>& {
    auto it = now.find(path);
    if (it == now.end()) {
      std::error_code error;
      const auto content = util::read_file(path, error);
      it = now.emplace(path, content ? std::optional(util::sha256(*content)) : std::nullopt).first;
    }
    return it->second;
  };
  return std::any_of(let_go.states.begin(), let_go.states.end(), [&](const LetGoState& state) {
    return std::all_of(state.headers.begin(), state.headers.end(),
                       [&](const auto& header) { return content_now(header.first) == header.second; });
  });
}

FileStamp unsettled(FileStamp stamp)
{
  stamp.mtime_ns = 0;
  stamp.ctime_ns = 0;
  return stamp;
}

bool folder_changed(const ProbedDir& dir, const FileStamp& now)
{
  if (now == dir.stamp) {
    return false;
  }
  if (dir.whole || !now.exists || now.inode != dir.stamp.inode || now.device != dir.stamp.device) {
    return true;  // watched whole, or another folder (removed, replaced) by that name
  }
  const std::string folder = dir.path == "/" ? std::string() : dir.path;
  const std::string_view names = dir.absent;
  for (std::size_t at = 0, end; (end = names.find('\n', at)) != std::string_view::npos; at = end + 1) {
    struct stat st {};
    if (::lstat((folder + "/").append(names.substr(at, end - at)).c_str(), &st) == 0) {
      return true;
    }
  }
  return false;
}

Validation validate(Resolution& entry, ValidationCounters& counters, ChangedHeader* changed)
{
  const std::int64_t start = stamp_clock_ns();  // before any stat: a change after it is stamped later
  Validation result = Validation::unchanged;
  for (DiskHeader& header : entry.headers) {
    ++counters.stats;
    const FileStamp now = stamp_of(header.path);
    if (now == header.stamp) {
      continue;
    }
    if (!now.exists) {
      if (changed != nullptr) {
        *changed = {header.path, std::nullopt};
      }
      return Validation::headers_changed;
    }
    ++counters.rehashes;
    std::error_code error;
    const auto content = util::read_file(header.path, error);
    const auto hash = content ? std::optional(util::sha256(*content)) : std::nullopt;
    if (hash != header.hash) {
      // An edit within the tick of now: a compile of it records no manifest entry (its stamp
      // can't stand for it), so an entry of it may be stored and not named here.
      if (too_new(now, start)) {
        return Validation::changed;
      }
      if (changed != nullptr) {
        *changed = {header.path, hash};
      }
      return Validation::headers_changed;
    }
    // The same content under a new stamp (a touch): the next check is a stat only, unless the stamp
    // is too new to stand for it (an edit within its tick would keep it: on a filesystem of whole
    // seconds, a touch and an edit within one second would be served the old binary). Then
    // the old stamp stays, and the next lookup hashes the header again (nothing to save: the
    // entry is as recorded).
    if (!too_new(now, start)) {
      header.stamp = now;
      result = Validation::same_content;
    }
  }
  for (const ProbedDir& dir : entry.dirs) {
    // A folder's new stamp is not taken: it may be too new, and a lookup that changes nothing in
    // the store stays a read. The next lookup asks its names again (an lstat each).
    if (const FileStamp now = stamp_of(dir.path); !(now == dir.stamp) && folder_changed(dir, now)) {
      return Validation::changed;
    }
  }
  return result;
}

} // namespace kjit::deps
