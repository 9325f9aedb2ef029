// Mirror writing: each entry is built in a short-named temp folder, then renamed into place.
#include "mirror/mirror.hpp"

#include "mirror/shared_headers.hpp"

#include "util/file.hpp"
#include "util/hash.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <ctime>
#include <dirent.h>
#include <fcntl.h>
#include <set>
#include <sys/stat.h>
#include <tuple>
#include <unistd.h>
#include <vector>

namespace kjit::mirror {

namespace {

using util::UniqueFd;

constexpr std::size_t k_max_component = 200;  // below NAME_MAX (255) on every Linux filesystem
constexpr const char* k_temp_prefix = ".tmp-";
constexpr const char* k_shared_headers = "headers";
constexpr const char* k_index = "index.txt";

std::error_code last_error()
{
  return {errno, std::generic_category()};
}

} // namespace

// Opens (creating) each component of `relative` below `base` without following symlinks.
std::optional<UniqueFd> open_path(int base, const std::string& relative, std::error_code& error)
{
  std::optional<UniqueFd> current;
  int fd = base;
  const int mode = util::mode_in(base, 0700, true);  // a shared cache's folders are the group's too
  std::size_t start = 0;
  while (start < relative.size()) {
    const auto slash = relative.find('/', start);
    const std::string part = relative.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    start = slash == std::string::npos ? relative.size() : slash + 1;
    auto next = util::open_subdir(fd, part, true, mode, error);
    if (!next) {
      return std::nullopt;
    }
    current = std::move(next);
    fd = current->get();
  }
  return current;
}

// A new file in a folder only this process writes (the temp folder): no temp name, no rename.
std::error_code write_new_file(int dir, const std::string& name, std::string_view content, int mode)
{
  mode = util::mode_in(dir, mode, false);
  UniqueFd fd(::openat(dir, name.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, mode));
  if (!fd) {
    return last_error();
  }
  util::set_group_mode(fd.get(), mode);
  while (!content.empty()) {
    const ssize_t written = ::write(fd.get(), content.data(), content.size());
    if (written < 0) {
      if (errno == EINTR) {
        continue;
      }
      return last_error();
    }
    content.remove_prefix(static_cast<std::size_t>(written));
  }
  return ::close(fd.release()) == 0 ? std::error_code{} : last_error();
}

namespace {

// The folder `name` below `dir` opened to be emptied, or -1 (not a folder, a symlink). A folder of
// this user's that lost its permissions (chmod 000 or 0500: a damaged mirror) is given them back
// first, or it could be neither listed nor emptied. Changed through an O_PATH descriptor of the
// folder itself, never a symlink's target.
int open_to_empty(int dir, const std::string& name)
{
  const int fd = ::openat(dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  struct stat st {};
  if (fd >= 0 && (::fstat(fd, &st) != 0 || (st.st_mode & S_IRWXU) == S_IRWXU || st.st_uid != ::geteuid())) {
    return fd;
  }
  if (fd < 0 && errno != EACCES) {
    return -1;
  }
  if (fd >= 0) {
    ::close(fd);
  }
  const UniqueFd path(::openat(dir, name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!path || ::fstat(path.get(), &st) != 0 || st.st_uid != ::geteuid()) {
    return -1;
  }
  std::ignore = ::chmod(("/proc/self/fd/" + std::to_string(path.get())).c_str(), 0700);
  return ::openat(path.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

} // namespace

// Removes `name` below `dir` (a folder tree or a file) without following symlinks.
void remove_below(int dir, const std::string& name)
{
  const int fd = open_to_empty(dir, name);
  if (fd < 0) {
    std::ignore = ::unlinkat(dir, name.c_str(), 0);
    return;
  }
  if (DIR* listing = ::fdopendir(fd)) {
    std::vector<std::string> children;
    while (const dirent* e = ::readdir(listing)) {
      const std::string child = e->d_name;
      if (child != "." && child != "..") {
        children.push_back(child);
      }
    }
    for (const auto& child : children) {
      remove_below(::dirfd(listing), child);
    }
    ::closedir(listing);
  } else {
    ::close(fd);
  }
  std::ignore = ::unlinkat(dir, name.c_str(), AT_REMOVEDIR);
}

namespace {

std::atomic<std::uint64_t> g_staged_finished{0};

} // namespace

std::uint64_t staged_folders_finished() noexcept
{
  return g_staged_finished.load(std::memory_order_relaxed);
}

std::string temp_folder_name(const std::string& hex_key)
{
  static std::atomic<unsigned> counter{0};
  return k_temp_prefix + hex_key.substr(0, 12) + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
}

namespace {

std::string lowered_names_text(const Binary& binary)
{
  std::string text;
  for (const auto& [expression, lowered] : binary.lowered_names) {
    text += expression + "\t" + lowered + "\n";
  }
  return text;
}

std::string log_text(const store::Entry& entry)
{
  std::string text = "# nvrtc options:";
  for (const auto& option : entry.options) {
    text += " " + option;
  }
  text += "\n# result: ";
  text += entry.kind == store::EntryKind::binary ? "ok" : "compile error";
  text += "\n" + entry.binary.log + (entry.binary.log.empty() ? "" : "\n");
  return text;
}

// Writes every file of the entry into the (new, empty) folder `dir` of `programs`; each header is
// a hard link to programs/headers/<sha256>, where its content is stored once.
// Links module/headers/<path> (below `module_dir`) to programs/headers/<sha256> for each header
// (name → content); `hex_of` names its content's SHA-256.
std::error_code link_headers(int programs, int module_dir, const std::map<std::string, std::string>& headers,
                             const std::function<std::string(const std::string&, const std::string&)>& hex_of,
                             const std::function<void(const std::string&)>& linked = nullptr)
{
  std::error_code error;
  std::optional<UniqueFd> shared;
  // The last header's folder, kept open: in path order most headers share it (a vendored CCCL's
  // 1 691 headers are in ≈ 200 folders; opening each one's path anew took ≈ 14 syscalls a header).
  std::string folder_path;
  std::optional<UniqueFd> folder;
  for (const auto& [name, relative] : header_paths(headers)) {
    const std::string path = "headers/" + relative;
    const auto slash = path.rfind('/');
    if (!folder || path.compare(0, slash, folder_path) != 0 || folder_path.size() != slash) {
      folder_path = path.substr(0, slash);
      folder = open_path(module_dir, folder_path, error);
      if (!folder) {
        return error;
      }
    }
    const std::string& content = headers.at(name);
    if (!shared) {
      shared = util::open_subdir(programs, k_shared_headers, true, util::mode_in(programs, 0755, true), error);
      if (!shared) {
        return error;
      }
    }
    if (auto e = link_shared_header(shared->get(), hex_of(name, content), content, folder->get(), path.substr(slash + 1))) {
      return e;
    }
    if (linked) {
      linked(name);
    }
  }
  return {};
}

// Writes every file of the entry into the (new, empty) folder `dir` of `programs` but the header
// links when `headers_linked` (a staged folder: stage_headers()).
std::error_code write_files(int programs, int dir, const store::Entry& entry, bool headers_linked)
{
  std::error_code error;
  auto module_dir = open_path(dir, "module", error);
  if (!module_dir) {
    return error;
  }
  struct File {
    int dir;
    std::string name;
    std::string content;
    int mode;
  };
  std::vector<File> files{
    {dir, "program.txt", entry.program_txt, 0644},
    {dir, "options.txt", entry.options_txt, 0644},
    {module_dir->get(), "source.cu", entry.source, 0644},
    {module_dir->get(), "compile.sh", compile_script(entry), 0755},
  };
  if (entry.kind != store::EntryKind::binary || !entry.binary.log.empty()) {
    // Only when the compiler said something: else it would hold only the options, which
    // compile.sh and options.txt hold, in a 4 KiB block of its own.
    files.push_back({module_dir->get(), "nvrtc_log.txt", log_text(entry), 0644});
  }
  if (entry.kind == store::EntryKind::binary) {
    files.push_back({module_dir->get(), "kernel.ptx", entry.binary.ptx, 0644});
    if (!entry.binary.lowered_names.empty()) {
      files.push_back({module_dir->get(), "lowered_names.txt", lowered_names_text(entry.binary), 0644});
    }
    if (!entry.binary.cubin.empty()) {
      files.push_back({module_dir->get(), "kernel." + entry.binary.arch + ".cubin", entry.binary.cubin, 0644});
    }
  }
  for (const File& file : files) {
    if (auto e = write_new_file(file.dir, file.name, file.content, file.mode)) {
      return e;
    }
  }
  if (!headers_linked) {
    for (const store::HeaderRef& ref : entry.header_refs) {
      if (entry.headers.count(ref.name) == 0) {
        return std::make_error_code(std::errc::no_such_file_or_directory);  // its content is not here: no folder that lies
      }
    }
    const store::HeaderHashes hashes(entry);
    if (auto e = link_headers(programs, module_dir->get(), entry.headers, [&](const std::string& name, const std::string& content) {
          return util::to_hex(hashes.of(name, content));
        })) {
      return e;
    }
  }
  if (!entry.ltoir.empty()) {
    auto ir_dir = open_path(dir, "ir", error);
    if (!ir_dir) {
      return error;
    }
    if (auto e = write_new_file(ir_dir->get(), "kernel.ltoir", entry.ltoir, 0644)) {
      return e;
    }
  }
  return {};
}

} // namespace

std::string safe_relative_path(const std::string& name)
{
  std::string out;
  std::size_t start = 0;
  while (start <= name.size()) {
    const auto slash = name.find('/', start);
    std::string part = name.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    start = slash == std::string::npos ? name.size() + 1 : slash + 1;
    if (part.empty() || part == ".") {
      continue;
    }
    if (part == "..") {
      part = "_up_";
    }
    if (part.size() > k_max_component) {
      // Too long for a file name: a readable head and a hash of the whole component.
      part = part.substr(0, 64) + "~" + util::to_hex(util::sha256(part)).substr(0, 16);
    }
    out += (out.empty() ? "" : "/") + part;
  }
  return out.empty() ? "_unnamed_" : out;
}

std::map<std::string, std::string> header_paths(const std::map<std::string, std::string>& headers)
{
  std::map<std::string, std::string> paths;
  std::set<std::string> folders;
  for (const auto& [name, content] : headers) {
    const std::string path = safe_relative_path(name);
    paths.emplace(name, path);
    for (auto slash = path.find('/'); slash != std::string::npos; slash = path.find('/', slash + 1)) {
      folders.insert(path.substr(0, slash));
    }
  }
  std::set<std::string> taken;
  for (auto& [name, path] : paths) {
    // A file named like a folder of another header ("cfg" and "cfg/detail.h"), or two names that
    // reduce to one path: suffixed until unique.
    while (folders.count(path) != 0 || taken.count(path) != 0) {
      path += "~";
    }
    taken.insert(path);
  }
  return paths;
}

namespace {

// <cache_dir>/programs, made if missing (open_path: no symlink followed below `cache_dir`).
std::optional<UniqueFd> open_programs(const std::string& cache_dir, std::error_code& error)
{
  // `cache_dir` may be /proc/self/fd/<n> (a checked descriptor): a magic link, so no O_NOFOLLOW here.
  UniqueFd root(::open(cache_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!root) {
    error = last_error();
    return std::nullopt;
  }
  return open_path(root.get(), "programs", error);
}

} // namespace

std::error_code write_entry(const std::string& cache_dir, const std::string& hex_key, const store::Entry& entry,
                            bool* replaced, const StagedHeaders* staged)
{
  std::error_code error;
  auto programs = open_programs(cache_dir, error);
  if (!programs) {
    return error;
  }
  std::string temp;
  std::optional<UniqueFd> temp_dir;
  if (staged != nullptr) {
    // Its header links are there: the rest of the folder is written into it.
    std::error_code ignored;
    temp_dir = util::open_subdir(programs->get(), staged->temp, false, 0, ignored);
    if (temp_dir) {
      temp = staged->temp;
    } else {
      remove_below(programs->get(), staged->temp);  // gone, or no folder by now: not used
    }
  }
  const bool linked = temp_dir.has_value();
  if (linked) {
    g_staged_finished.fetch_add(1, std::memory_order_relaxed);
  } else {
    temp = temp_folder_name(hex_key);
    temp_dir = util::open_subdir(programs->get(), temp, true, util::mode_in(programs->get(), 0700, true), error);
    if (!temp_dir) {
      return error;
    }
  }
  error = write_files(programs->get(), temp_dir->get(), entry, linked);
  if (!error) {
    std::ignore = ::fchmod(temp_dir->get(), static_cast<mode_t>(util::mode_in(programs->get(), 0755, true)));
    // Into place: a plain rename if there is nothing there, else an exchange (whatever was there —
    // an old folder, a planted symlink — ends up under the temp name and is removed, never followed).
    if (::renameat2(programs->get(), temp.c_str(), programs->get(), hex_key.c_str(), RENAME_NOREPLACE) == 0) {
      return {};  // nothing left under the temp name
    }
    if (errno != EEXIST ||
        ::renameat2(programs->get(), temp.c_str(), programs->get(), hex_key.c_str(), RENAME_EXCHANGE) != 0) {
      error = last_error();
    } else if (replaced != nullptr) {
      *replaced = true;
    }
  }
  remove_below(programs->get(), temp);
  return error;
}

std::map<std::string, std::string> header_hashes(const store::Entry& entry)
{
  const store::HeaderHashes hashes(entry);
  std::map<std::string, std::string> out;
  for (const auto& [name, content] : entry.headers) {
    out.emplace(name, util::to_hex(hashes.of(name, content)));
  }
  for (const store::HeaderRef& ref : entry.header_refs) {
    out.emplace(ref.name, util::to_hex(ref.hash));  // known by reference only (not there if named above)
  }
  return out;
}

std::optional<StagedHeaders> stage_headers(const std::string& cache_dir, std::vector<EarlyHeader> early)
{
  std::error_code error;
  auto programs = open_programs(cache_dir, error);
  if (!programs) {
    return std::nullopt;
  }
  StagedHeaders staged{temp_folder_name("staged-heade"), {}};
  std::map<std::string, std::string> headers;
  for (EarlyHeader& header : early) {
    headers.emplace(header.name, std::move(header.content));
    staged.hashes.emplace(std::move(header.name), std::move(header.hex));
  }
  early = {};
  const std::map<std::string, std::string>& hashes = staged.hashes;
  auto temp_dir = util::open_subdir(programs->get(), staged.temp, true, util::mode_in(programs->get(), 0700, true), error);
  if (!temp_dir) {
    return std::nullopt;
  }
  // Each header's shared file written if missing, then linked, then its content let go: the
  // contents (a vendored CCCL's 13.7 MB) are not all held while NVRTC runs beside this thread.
  auto module_dir = open_path(temp_dir->get(), "module", error);
  if (!module_dir ||
      link_headers(programs->get(), module_dir->get(), headers,
                   [&](const std::string& name, const std::string&) { return hashes.at(name); },
                   [&](const std::string& name) { std::string().swap(headers.at(name)); })) {
    remove_below(programs->get(), staged.temp);
    return std::nullopt;
  }
  return staged;
}

void remove_staged(const std::string& cache_dir, const StagedHeaders& staged)
{
  std::error_code error;
  if (auto programs = open_programs(cache_dir, error)) {
    remove_below(programs->get(), staged.temp);
  }
}

void remove_entry(const std::string& cache_dir, const std::string& hex_key)
{
  UniqueFd root(::open(cache_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!root) {
    return;
  }
  UniqueFd programs(::openat(root.get(), "programs", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (programs && hex_key.find('/') == std::string::npos && !hex_key.empty() && hex_key[0] != '.') {
    remove_below(programs.get(), hex_key);
  }
}

std::size_t remove_picked(int parent, const std::string& folder,
                          const std::function<bool(int dir, const std::string& name, const struct stat& st)>& pick,
                          const std::function<void(int dir, const std::string& name)>& remove)
{
  const int fd = ::openat(parent, folder.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    return 0;
  }
  DIR* listing = ::fdopendir(fd);
  if (listing == nullptr) {
    ::close(fd);
    return 0;
  }
  std::vector<std::string> doomed;
  while (const dirent* e = ::readdir(listing)) {
    const std::string name = e->d_name;
    struct stat st {};
    if (name != "." && name != ".." && ::fstatat(::dirfd(listing), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        pick(::dirfd(listing), name, st)) {
      doomed.push_back(name);
    }
  }
  for (const auto& name : doomed) {
    remove(::dirfd(listing), name);
  }
  ::closedir(listing);
  return doomed.size();
}

std::size_t prune(const std::string& cache_dir, const std::set<std::string>* keep)
{
  UniqueFd root(::open(cache_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!root) {
    return 0;
  }
  const std::time_t now = ::time(nullptr);
  const auto pick = [&](int, const std::string& name, const struct stat& st) {
    if (name.rfind(k_temp_prefix, 0) == 0) {
      return now - st.st_mtime > k_stale_temp_seconds;  // left by a killed run
    }
    if (name == k_shared_headers) {
      return !S_ISDIR(st.st_mode);  // the shared headers (sweep_headers()), unless damage took the name
    }
    if (name == k_index) {
      return !S_ISREG(st.st_mode);  // the index, unless damage took the name (written again after)
    }
    if (name.rfind(".index.txt", 0) == 0) {
      return now - st.st_mtime > k_stale_temp_seconds;  // the index's temp file: a killed run's when old
    }
    return keep != nullptr && keep->count(name) == 0;  // not an entry of the store: junk
  };
  return remove_picked(root.get(), "programs", pick, remove_below);
}

void remove_tree(const std::string& cache_dir, const std::string& relative)
{
  // Through descriptors, never following a symlink, and giving this user's folders that lost
  // their permissions them back (mirror::remove_below).
  const util::UniqueFd parent(::open(cache_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (parent && !relative.empty() && relative.find('/') == std::string::npos) {
    remove_below(parent.get(), relative);
  }
}

} // namespace kjit::mirror
