// What a resolution watches besides its headers: the folders it searched (their stamps and
// listings), the names looked for there in vain, and the entries a folder's stamp does not cover.
#include "deps/resolver.hpp"

#include "util/file.hpp"

#include <algorithm>
#include <atomic>
#include <dirent.h>
#include <sys/stat.h>

namespace kjit::deps {

namespace {

std::atomic<std::uint64_t> g_listings{0};

} // namespace

std::uint64_t folder_listings() noexcept
{
  return g_listings.load(std::memory_order_relaxed);
}

void Resolver::probe(const std::string& candidate, bool whole)
{
  // A missing folder is watched through its deepest existing ancestor: creating anything below
  // changes that folder's stamp.
  std::string dir = dir_of(candidate);
  std::string entry = candidate;  // the entry of `dir` the candidate's path goes through
  const FileStamp* stamp = folder_stamp(dir);
  while (dir.size() > 1 && stamp == nullptr) {
    entry = dir;
    dir = dir_of(dir);
    stamp = folder_stamp(dir);
  }
  const std::string name = entry.substr(std::min(entry.size(), dir.size() + 1));
  const bool one_step = name != "." && name != ".." && !name.empty() && name.find('/') == std::string::npos;
  bool absent = false;
  if (one_step && m_index.count(entry) == 0) {
    // The entry is there but was not taken: what can change without the folder's stamp is watched
    // too. A symbolic link whose target is missing (a generated header not made yet): its target's
    // folder, where the target appears; an entry that is no readable file (unreadable, a folder):
    // its own stamp (chmod changes its ctime): the folder's stamp alone misses a target or a
    // permission that appears later. Whether the entry is there is asked of the
    // folder's listing when there is one (the closure's), else by one lstat: no listing is made
    // for it (a string program's working folder may be large).
    const auto listed = m_listings.find(dir);
    struct stat st {};
    if (listed != m_listings.end() ? listed->second && listed->second->count(name) != 0
                                   : ::lstat(entry.c_str(), &st) == 0) {
      watch_entry(entry);
    } else {
      absent = true;
    }
  }
  // "." and ".." name no entry: a change of the folder matters through its names or not at all.
  ProbedDir& watch = watched(dir, stamp != nullptr ? *stamp : stamp_of(dir), whole || name == "..");
  if (absent) {
    note_absent(watch, name);
  }
}

AbsentNames::AbsentNames(std::string text)
{
  if (!text.empty()) {
    m_text = std::make_shared<std::string>(std::move(text));
  }
}

void AbsentNames::append(std::string_view name)
{
  if (!m_text) {
    m_text = std::make_shared<std::string>();
  } else if (m_text.use_count() > 1) {
    m_text = std::make_shared<std::string>(*m_text);  // the others keep theirs
  }
  m_text->append(name).push_back('\n');
}

bool listed_absent(const ProbedDir& dir, std::string_view name)
{
  const std::string_view list = dir.absent;
  for (std::size_t at = list.find(name); at != std::string_view::npos; at = list.find(name, at + 1)) {
    if ((at == 0 || list[at - 1] == '\n') && at + name.size() < list.size() && list[at + name.size()] == '\n') {
      return true;
    }
  }
  return false;
}

void Resolver::note_absent(ProbedDir& dir, const std::string& name)
{
  if (name.find('\n') != std::string::npos) {
    mark_whole(dir);  // not in a list of lines (no #include can name it)
    return;
  }
  // `dir` is one of m_result.dirs (watched() gave it): its names are kept by its place there.
  if (m_absent_shed) {
    if (!listed_absent(dir, name)) {
      dir.absent.append(name);
    }
    return;
  }
  const auto index = static_cast<std::size_t>(&dir - m_result.dirs.data());
  if (m_absent.size() <= index) {
    m_absent.resize(m_result.dirs.size());
  }
  if (m_absent[index].insert(name).second) {
    dir.absent.append(name);
  }
}

void Resolver::shed_absent_index()
{
  m_absent_shed = true;
  std::vector<std::unordered_set<std::string>>().swap(m_absent);
}

ProbedDir& Resolver::watched(const std::string& path, const FileStamp& stamp, bool whole)
{
  auto it = m_probed.find(path);
  if (it == m_probed.end()) {
    // "Too new", as for headers: a folder changed within the timestamp tick of the start of the
    // resolution, or after it, may change again within that tick (coarse timestamps: kernels
    // before 6.13, filesystems of whole seconds) with the same stamp, and a file appearing there
    // would go unseen. A manifest does not take its stamp: every check asks its names again
    // (ProbedDir::too_new; mark_whole()).
    m_result.dirs.push_back({path, stamp, false, {}, too_new(stamp, m_start_ns)});
    it = m_probed.emplace(path, m_result.dirs.size() - 1).first;
  }
  ProbedDir& dir = m_result.dirs[it->second];
  if (whole || m_whole_dirs.count(path) != 0) {
    mark_whole(dir);
  }
  return dir;
}

void Resolver::mark_whole(ProbedDir& dir)
{
  dir.whole = true;
  if (dir.too_new) {
    m_result.recordable = false;  // any change matters, and its stamp can't show one
  }
}

void Resolver::watch_whole(const std::string& dir)
{
  if (m_whole_dirs.insert(dir).second) {
    if (const auto it = m_probed.find(dir); it != m_probed.end()) {
      mark_whole(m_result.dirs[it->second]);
    }
  }
}

void Resolver::watch_entry(const std::string& entry)
{
  struct stat st {};
  if (::lstat(entry.c_str(), &st) != 0) {
    return;
  }
  if (S_ISLNK(st.st_mode)) {
    if (const std::string real = walk_path(entry).real; real != entry && m_watched_links.insert(entry).second) {
      // The deepest existing folder on the link's way (its target's folder, once there), and the
      // target itself when it is there but no readable file.
      probe(real);
    }
    return;
  }
  if (m_probed.count(entry) == 0) {
    watched(entry, stamp_of(entry), true);  // its own stamp: any change matters
  }
}

const FileStamp* Resolver::folder_stamp(const std::string& dir)
{
  // One stat per folder and resolution, not a listing: a folder's names are read only where a
  // name is looked up in it (listed_file), not for every folder watched (a string program's
  // working folder, on every miss). The stamp is the one taken when the folder was first seen,
  // so a change after it is never missed.
  auto it = m_folders.find(dir);
  if (it == m_folders.end()) {
    it = m_folders.emplace(dir, folder_stamp_of(dir)).first;
  }
  return it->second.exists ? &it->second : nullptr;
}

const std::set<std::string>* Resolver::listing(const std::string& dir)
{
  auto it = m_listings.find(dir);
  if (it == m_listings.end()) {
    std::optional<std::set<std::string>> names;
    g_listings.fetch_add(1, std::memory_order_relaxed);
    if (DIR* handle = ::opendir(dir.c_str())) {
      names.emplace();
      while (const dirent* entry = ::readdir(handle)) {
        names->insert(entry->d_name);
      }
      ::closedir(handle);
    }
    it = m_listings.emplace(dir, std::move(names)).first;
  }
  return it->second ? &*it->second : nullptr;
}

bool Resolver::listed_file(const std::string& path)
{
  const auto slash = path.rfind('/');
  const std::set<std::string>* names = listing(slash == 0 ? "/" : path.substr(0, slash));
  return names != nullptr && names->count(path.substr(slash + 1)) != 0 && util::is_regular_file(path);
}

} // namespace kjit::deps
