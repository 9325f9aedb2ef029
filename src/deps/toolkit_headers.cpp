// Toolkit header fingerprint: one walk per change of the trees, folder stats otherwise.
#include "deps/toolkit_headers.hpp"

#include "util/file.hpp"
#include "util/hash.hpp"
#include "util/unique_handle.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <exception>
#include <charconv>
#include <cstring>
#include <cctype>
#include <fcntl.h>
#include <ftw.h>
#include <map>
#include <mutex>
#include <set>
#include <string_view>
#include <sys/stat.h>
#include <system_error>
#include <thread>

namespace kjit::deps {

namespace {

// " mtime ctime inode" of a folder: the part of its stamp line after the path.
std::string_view stamp_tail(const struct stat& st, std::array<char, 128>& buffer)
{
  char* at = buffer.data();
  char* const end = buffer.data() + buffer.size();
  const auto put = [&](char separator, auto number) {
    *at++ = separator;
    at = std::to_chars(at, end, number).ptr;
  };
  put(' ', st.st_mtim.tv_sec);
  put('.', st.st_mtim.tv_nsec);
  put(' ', st.st_ctim.tv_sec);
  put('.', st.st_ctim.tv_nsec);
  put(' ', st.st_ino);
  return {buffer.data(), static_cast<std::size_t>(at - buffer.data())};
}

std::string dir_stamp(const std::string& path, const struct stat& st)
{
  std::array<char, 128> buffer{};
  return path + std::string(stamp_tail(st, buffer));
}

// nftw has no user pointer: the walk in progress (under g_mutex).
std::vector<std::string>* g_paths = nullptr;
std::vector<std::string>* g_dirs = nullptr;
std::mutex g_mutex;
std::map<std::string, std::string> g_memo;  // dirs → the kept text (see walk()) for this process
std::map<std::string, std::shared_ptr<const std::vector<std::string>>> g_names_memo;  // dirs → names asked for
std::atomic<std::uint64_t> g_stamp_checks{0};  // still_valid() calls, for toolkit_stamp_checks()

// Notes in `names` every header name `content` may include or probe: each "<name>" or "\"name\""
// right after a word ending in include/INCLUDE (#include, #include_next, __has_include(,
// _CCCL_HAS_INCLUDE(…). Comments and false #ifs are not told apart: a name too many costs a stat,
// one too few a wrong binary. Not a preprocessor: fast enough for every file of the trees (the
// scanner is 10× slower).
void note_names(const std::string& content, std::set<std::string>& names)
{
  // memmem(): a third faster here than std::string::find, which stops at every 'i'.
  const auto find = [&content](const char* word, std::size_t from) {
    const void* hit = from < content.size() ? ::memmem(content.data() + from, content.size() - from, word, 7) : nullptr;
    return hit == nullptr ? std::string::npos : static_cast<std::size_t>(static_cast<const char*>(hit) - content.data());
  };
  for (const char* word : {"include", "INCLUDE"}) {
    for (auto at = find(word, 0); at != std::string::npos; at = find(word, at + 1)) {
      std::size_t i = at + 7;
      while (i < content.size() && (std::isalnum(static_cast<unsigned char>(content[i])) || content[i] == '_')) {
        ++i;  // include_next
      }
      while (i < content.size() && (content[i] == ' ' || content[i] == '\t' || content[i] == '(')) {
        ++i;
      }
      if (i >= content.size() || (content[i] != '<' && content[i] != '"')) {
        continue;
      }
      const auto end = content.find_first_of(content[i] == '<' ? ">\n" : "\"\n", i + 1);
      if (end != std::string::npos && content[end] != '\n' && end > i + 1 && content[i + 1] != '/') {
        names.insert(content.substr(i + 1, end - i - 1));
      }
    }
  }
}

int visit(const char* path, const struct stat* st, int type, FTW*)
{
  if (type == FTW_D) {
    g_dirs->push_back(dir_stamp(path, *st));
  } else if (type == FTW_F) {
    g_paths->push_back(path);
  }
  return 0;
}

// For each of `paths` from `first` on, every `step`-th: "<name below the root> <SHA-256 of its
// content>" into `lines` (at the path's index), and the names it includes into `names`.
void read_files(const std::vector<std::string>& paths, std::size_t root_size, std::size_t first, std::size_t step,
                std::vector<std::string>& lines, std::set<std::string>& names)
{
  for (std::size_t i = first; i < paths.size(); i += step) {
    // Relative name and content: the same trees anywhere (a copy, links to the files) give the
    // same fingerprint; dates never enter it.
    std::error_code error;
    const auto content = util::read_file(paths[i], error);
    lines[i] = paths[i].substr(std::min(root_size, paths[i].size())) + " " +
               (content ? util::to_hex(util::sha256(*content)) : "unreadable");
    if (content) {
      note_names(*content, names);
    }
  }
}

// The lines and names of `paths` (read_files()), on two threads where there are two cores: the
// files are read and hashed once per store (≈ 28 MB and 2 000 files for CUDA 13), on the path of
// its first key that holds them.
std::vector<std::string> read_all(const std::vector<std::string>& paths, std::size_t root_size,
                                  std::set<std::string>& names)
{
  std::vector<std::string> lines(paths.size());
  std::set<std::string> other_names;
  std::exception_ptr other_failed;  // what the other thread threw (nettle missing, no memory)
  std::thread other;
  if (std::thread::hardware_concurrency() > 1 && paths.size() > 1) {
    try {
      other = std::thread([&] {
        try {
          read_files(paths, root_size, 1, 2, lines, other_names);
        } catch (...) {
          other_failed = std::current_exception();
        }
      });
    } catch (const std::system_error&) {
      // No thread: this one reads them all.
    }
  }
  const std::size_t step = other.joinable() ? 2 : 1;
  try {
    read_files(paths, root_size, 0, step, lines, names);
  } catch (...) {
    if (other.joinable()) {
      other.join();
    }
    throw;
  }
  if (other.joinable()) {
    other.join();
    if (other_failed) {
      std::rethrow_exception(other_failed);
    }
    names.merge(other_names);
  }
  return lines;
}

// "fingerprint\n", one stamp line per folder, an empty line, then one line per header name the
// trees include or probe (a user -I folder's file of such a name is what NVRTC takes: resolver.cpp).
std::string walk(const std::vector<std::string>& dirs)
{
  std::vector<std::string> paths;
  std::vector<std::string> folders;
  std::set<std::string> names;
  g_paths = &paths;
  g_dirs = &folders;
  util::Sha256Hasher hasher;
  for (const auto& dir : dirs) {
    bool nested = false;
    for (const auto& other : dirs) {
      nested = nested || (other != dir && dir.rfind(other + "/", 0) == 0);
    }
    if (nested) {
      continue;  // include/cccl is walked with include
    }
    paths.clear();
    std::ignore = ::nftw(dir.c_str(), visit, 32, 0);  // links followed: a toolkit copied as links counts as the same
    std::vector<std::string> files = read_all(paths, dir.size(), names);
    std::sort(files.begin(), files.end());
    hasher.update("root\n");
    for (const auto& line : files) {
      hasher.update(line).update("\n");
    }
  }
  std::string out = util::to_hex(hasher.finish()) + "\n";
  for (const auto& line : folders) {
    out += line + "\n";
  }
  out += "\n";
  for (const auto& name : names) {
    out += name + "\n";
  }
  return out;
}

// What the kept text of the trees `dirs` is found by (g_memo, g_names_memo; its hash names it in
// the store). "content names": a version, texts made before (dates, no names) are not reused.
std::string memo_name(const std::vector<std::string>& dirs)
{
  std::string names = "content names\n";
  for (const auto& dir : dirs) {
    names += dir + "\n";
  }
  return names;
}

std::shared_ptr<const std::vector<std::string>> names_of(const std::string& kept)
{
  auto names = std::make_shared<std::vector<std::string>>();
  const auto at = kept.find("\n\n");
  for (std::size_t start = at == std::string::npos ? kept.size() : at + 2; start < kept.size();) {
    const auto end = std::min(kept.find('\n', start), kept.size());
    names->push_back(kept.substr(start, end - start));
    start = end + 1;
  }
  return names;
}

// The walked trees' roots, each opened once: a folder of a tree is stat-ed relative to its root,
// so the root's path (for /usr/local/cuda/include: two symbolic links and four names) is resolved
// once per process, not once per folder (≈ 130 folders for CUDA 13).
class Roots {
public:
  explicit Roots(const std::vector<std::string>& dirs)
  {
    for (const auto& dir : dirs) {
      util::UniqueFd fd(::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
      if (fd) {
        m_roots.push_back({dir, std::move(fd)});
      }
    }
  }

  // stat(2) of `path` (links followed), through the longest root that holds it.
  int stat(const std::string& path, struct stat& st) const
  {
    const Root* best = nullptr;
    for (const auto& root : m_roots) {
      const bool inside = path.size() == root.path.size() ||
                          (path.size() > root.path.size() && path[root.path.size()] == '/');
      if (inside && path.compare(0, root.path.size(), root.path) == 0 &&
          (best == nullptr || root.path.size() > best->path.size())) {
        best = &root;
      }
    }
    if (best == nullptr) {
      return ::stat(path.c_str(), &st);
    }
    const char* relative = path.size() == best->path.size() ? "." : path.c_str() + best->path.size() + 1;
    return ::fstatat(best->fd.get(), relative, &st, 0);
  }

private:
  struct Root {
    std::string path;
    util::UniqueFd fd;
  };
  std::vector<Root> m_roots;
};

// True when every folder stamp listed after the first line of `kept` still holds (`dirs`: the
// trees it was made from).
bool still_valid(const std::string& kept, const std::vector<std::string>& dirs)
{
  std::size_t at = kept.find('\n');
  if (at == std::string::npos || at != 64) {
    return false;
  }
  g_stamp_checks.fetch_add(1, std::memory_order_relaxed);
  const Roots roots(dirs);
  std::string path;
  for (++at; at < kept.size();) {
    const auto end = kept.find('\n', at);
    // Compared in place: a fresh process checks every folder (≈ 130 for CUDA 13), with no
    // string built per line.
    const std::string_view line = std::string_view(kept).substr(at, end - at);
    if (line.empty()) {
      break;  // the names follow
    }
    const auto space = line.find(' ');
    if (space == std::string_view::npos) {
      return false;
    }
    path.assign(line.substr(0, space));
    struct stat st {};
    std::array<char, 128> buffer{};
    if (roots.stat(path, st) != 0 || stamp_tail(st, buffer) != line.substr(space)) {
      return false;
    }
    at = end == std::string::npos ? kept.size() : end + 1;
  }
  return true;
}

} // namespace

std::string toolkit_headers_fingerprint(const std::vector<std::string>& dirs, store::Store* store)
{
  const std::string names = memo_name(dirs);
  // Named by XXH3-128: a hit runs no SHA-256, so nettle is not loaded (util/hash.cpp).
  const std::string meta_key = "toolkit-headers " + util::to_hex(util::checksum(names));
  std::lock_guard lock(g_mutex);
  std::string& kept = g_memo[names];
  if (kept.empty() && store != nullptr) {
    if (auto stored = store->get(store::Table::meta, meta_key)) {
      kept = std::move(*stored);  // ≈ 80 KB with the names: one copy out of the map, not two
    }
  }
  if (kept.empty() || !still_valid(kept, dirs)) {
    kept = walk(dirs);
    if (store != nullptr && store->writable()) {
      store->put({{store::Table::meta, meta_key, kept}});
    }
    g_names_memo.erase(names);
  }
  // The names (thousands of lines) are split out only when the resolver asks for them: a hit
  // never does.
  return kept.substr(0, 64);
}

std::shared_ptr<const std::vector<std::string>> toolkit_include_names(const std::vector<std::string>& dirs)
{
  const std::string names = memo_name(dirs);
  {
    std::lock_guard lock(g_mutex);
    if (const auto it = g_names_memo.find(names); it != g_names_memo.end()) {
      return it->second;
    }
  }
  std::ignore = toolkit_headers_fingerprint(dirs, nullptr);
  std::lock_guard lock(g_mutex);
  auto& kept_names = g_names_memo[names];
  if (!kept_names) {
    kept_names = names_of(g_memo[names]);
  }
  return kept_names;
}

std::uint64_t toolkit_stamp_checks()
{
  return g_stamp_checks.load(std::memory_order_relaxed);
}

} // namespace kjit::deps
