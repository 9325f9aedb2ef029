// Cache-folder safety: ownership, permissions, read-only folders, network filesystems.
#include "cache/cache_dir.hpp"

#include "config/log.hpp"
#include "mirror/mirror.hpp"
#include "store/location.hpp"
#include "util/file.hpp"

#include <kjit/error.hpp>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <linux/magic.h>
#include <string_view>
#include <tuple>
#include <cstdio>
#include <mutex>
#include <set>
#include <vector>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

namespace kjit::cache {

namespace {

std::string octal(mode_t mode)
{
  char buffer[8];
  std::snprintf(buffer, sizeof buffer, "%04o", static_cast<unsigned>(mode & 07777));
  return buffer;
}

} // namespace

namespace {

// Every parent of `real` must belong to root or the user, and be writable by nobody else unless it
// is sticky (where others can't rename what they don't own, as in /tmp).
void check_parents(const std::string& real, bool shared)
{
  std::string parent = real;
  while (parent.size() > 1) {
    const auto slash = parent.rfind('/');
    parent = slash == 0 ? "/" : parent.substr(0, slash);
    struct stat st {};
    if (::lstat(parent.c_str(), &st) != 0) {
      continue;
    }
    const bool foreign = st.st_uid != 0 && st.st_uid != ::geteuid();
    const mode_t writers = shared ? 002 : 022;
    if ((foreign || (st.st_mode & writers) != 0) && (st.st_mode & S_ISVTX) == 0) {
      throw StoreError("refusing the cache folder " + real + ": its parent " + parent + " (uid " +
                         std::to_string(st.st_uid) + ", mode " + octal(st.st_mode) +
                         ") lets another user replace the folder with their own. Use a folder whose parents "
                         "only you (or root) can write.",
                       EPERM);
    }
  }
}

// A file of the store: a plain file of the user (group member when shared), one link, not writable
// by others. Returns the reason it fails, or "" (also when it does not exist yet).
std::string store_file_problem(int store_fd, const char* name, bool shared)
{
  struct stat st {};
  if (::fstatat(store_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
    return {};
  }
  if (!S_ISREG(st.st_mode)) {
    return std::string(name) + " is not a plain file";
  }
  if (st.st_nlink != 1) {
    return std::string(name) + " has " + std::to_string(st.st_nlink) + " links";
  }
  if (!shared && st.st_uid != ::geteuid()) {
    return std::string(name) + " belongs to uid " + std::to_string(st.st_uid);
  }
  if ((st.st_mode & (shared ? 002 : 022)) != 0) {
    return std::string(name) + " has mode " + octal(st.st_mode);
  }
  return {};
}

// Creates (if needed: never when `inspect_only`, which sets dir.store_absent instead) and opens
// `name` below the checked folder `parent_fd` and checks it and its files. Null (after one
// warning) when it must not be used.
std::shared_ptr<util::UniqueFd> open_store_folder(int parent_fd, const std::string& name, const std::string& shown,
                                                  bool shared, CacheDir& dir, bool inspect_only)
{
  const int flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
  util::UniqueFd fd(::openat(parent_fd, name.c_str(), flags));
  if (inspect_only) {
    // Looking makes nothing: no store folder, or one without data.mdb, is an empty cache (not a
    // damaged one), left as it is.
    struct stat data {};
    const bool missing = fd ? ::fstatat(fd.get(), "data.mdb", &data, AT_SYMLINK_NOFOLLOW) != 0 && errno == ENOENT
                            : errno == ENOENT;
    if (missing) {
      dir.store_absent = true;
      return nullptr;
    }
  }
  int open_error = fd ? 0 : errno;
  if (!fd && errno == ENOENT) {  // made once; a warm start only opens it
    const bool made = ::mkdirat(parent_fd, name.c_str(), shared ? 02770 : 0700) == 0;
    open_error = made ? 0 : errno;  // the reason it is missing: a read-only or full filesystem, ...
    fd = util::UniqueFd(::openat(parent_fd, name.c_str(), flags));
    open_error = fd ? 0 : (open_error != 0 && open_error != EEXIST ? open_error : errno);
  }
  if (!fd) {
    // Not a question of who may write there: the folder can't be made or opened.
    dir.store_problem = "cannot open the store " + shown + ": " + std::strerror(open_error);
    warn_once(dir.store_problem + ". Running without a disk cache (memory only)");
    return nullptr;
  }
  std::string problem = private_folder_problem(fd.get(), shared);
  if (problem.empty() && shared) {
    std::ignore = ::fchmod(fd.get(), 02770);  // the group's, whoever made it (fails harmlessly if not ours)
  }
  for (const char* file : {"data.mdb", "lock.mdb", "compile.lock"}) {
    if (problem.empty()) {
      problem = store_file_problem(fd.get(), file, shared);
    }
  }
  if (!problem.empty()) {
    dir.store_problem = "refusing the store " + shown + ": " + problem;
    warn_once(dir.store_problem + "; another user could plant kernels there. Running without a disk cache (memory only)");
    return nullptr;
  }
  return std::make_shared<util::UniqueFd>(std::move(fd));
}

// A shared cache folder (group-writable) must be setgid: without it, what each member makes in it
// belongs to that member's own primary group, and the others are locked out (or that group, maybe
// everyone's, let in). One this process just made takes its parent's group (the folder an
// administrator gave the group) and is made setgid; one of ours is made setgid; another member's
// that is not is refused, saying what to do.
void keep_the_group(int fd, struct stat& st, const std::string& real, const std::string& shown, bool made_now)
{
  if ((st.st_mode & S_IWGRP) == 0) {
    return;  // not group-writable: an owner's cache, accepted as before
  }
  struct stat parent {};
  const std::string above = real.substr(0, std::max<std::size_t>(real.rfind('/'), 1));
  if (made_now && st.st_uid == ::geteuid() && ::stat(above.c_str(), &parent) == 0 && (parent.st_mode & S_IWGRP) != 0 &&
      parent.st_gid != st.st_gid && ::fchown(fd, static_cast<uid_t>(-1), parent.st_gid) == 0) {
    std::ignore = ::fstat(fd, &st);  // the parent's group (one this user is in, or fchown failed)
  }
  if ((st.st_mode & S_ISGID) != 0) {
    return;
  }
  if (st.st_uid != ::geteuid()) {
    throw StoreError("refusing the shared cache folder " + shown + ": it is group-writable but not setgid (mode " +
                       octal(st.st_mode) + "), so what each member makes in it would belong to that member's own "
                       "group. chmod g+s it (its owner or root)",
                     EPERM);
  }
  if (::fchmod(fd, (st.st_mode & 07777) | S_ISGID) == 0) {
    std::ignore = ::fstat(fd, &st);
  }
}

// Creates the cache folder `path` (as configured: `shown`) if missing, checks its parents and
// opens and checks it; `real` is set to its resolved path. Throws StoreError.
util::UniqueFd open_checked_folder(const std::string& path, const std::string& shown, bool shared, std::string& real)
{
  // A shared cache's folder is its group's (setgid: what is made in it keeps the group).
  struct stat before {};
  const bool existed = ::stat(path.c_str(), &before) == 0;
  const std::error_code created = util::create_directories(path, shared ? 02770 : 0700);
  char resolved[PATH_MAX];
  if (::realpath(path.c_str(), resolved) == nullptr) {
    throw StoreError("cannot create the cache folder " + shown + ": " +
                       (created ? created.message() : std::string("it does not exist")),
                     created ? created.value() : ENOENT);
  }
  real = resolved;
  check_parents(real, shared);
  util::UniqueFd fd(::open(real.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  struct stat st {};
  if (!fd || ::fstat(fd.get(), &st) != 0) {
    const int error = errno;
    throw StoreError("the cache folder " + shown + " cannot be opened as a folder: " + std::strerror(error), error);
  }
  if (shared) {
    keep_the_group(fd.get(), st, real, shown, !existed);
  } else {
    if (st.st_uid != ::geteuid()) {
      throw StoreError("refusing the cache folder " + shown + ": it belongs to uid " + std::to_string(st.st_uid) +
                         ", not to you (uid " + std::to_string(::geteuid()) +
                         "); another user could plant kernels there. Set KJIT_SHARED_CACHE=1 if it is meant to be shared.",
                       EPERM);
    }
    if ((st.st_mode & 022) != 0) {
      throw StoreError("refusing the cache folder " + shown + ": its mode " + octal(st.st_mode) +
                         " lets group or others write kernels into it. chmod go-w it, or set KJIT_SHARED_CACHE=1 "
                         "if it is meant to be shared.",
                       EPERM);
    }
  }
  return fd;
}

} // namespace

CacheDir open_cache_dir(const Config& config)
{
  CacheDir dir;
  dir.path = config.cache_dir;
  std::string real;
  util::UniqueFd fd = open_checked_folder(dir.path, dir.path, config.shared_cache, real);
  struct stat st {};
  std::ignore = ::fstat(fd.get(), &st);
  dir.real = real;
  dir.dev = st.st_dev;
  dir.ino = st.st_ino;
  dir.io_path = "/proc/self/fd/" + std::to_string(fd.get());
  dir.writable = ::faccessat(fd.get(), ".", W_OK, 0) == 0;
  dir.fd = std::make_shared<util::UniqueFd>(std::move(fd));
  std::string fs_name;
  const bool network = store::on_network_filesystem(real, fs_name);
  if (network) {
    dir.store_dir = store::store_dir_for(real, true);
    warn_once("the cache folder " + dir.path + " is on a network filesystem (" + fs_name +
              "), where LMDB is unsafe; the store goes to the node-local folder " + dir.store_dir +
              " (the mirror stays in the cache folder)");
    const std::string base = dir.store_dir.substr(0, dir.store_dir.rfind('/'));
    if (config.inspect_only && ::access(base.c_str(), F_OK) != 0 && errno == ENOENT) {
      dir.store_absent = true;  // looking makes nothing
      dir.store_dir.clear();
      return dir;
    }
    std::ignore = ::mkdir(base.c_str(), 0700);
    util::UniqueFd base_fd(::open(base.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!base_fd) {
      dir.store_problem = "cannot open the node-local store folder " + base + ": " + std::strerror(errno);
      warn_once(dir.store_problem + ". Running without a disk cache (memory only)");
      dir.store_dir.clear();
      return dir;
    }
    const std::string problem = private_folder_problem(base_fd.get(), false, true);
    if (!problem.empty()) {
      dir.store_problem = "refusing the node-local store folder " + base + ": " + problem;
      warn_once(dir.store_problem + "; another user could plant kernels there. Running without a disk cache (memory only)");
      dir.store_dir.clear();
      return dir;
    }
    dir.store_fd = open_store_folder(base_fd.get(), dir.store_dir.substr(base.size() + 1), dir.store_dir, false, dir,
                                     config.inspect_only);
  } else {
    dir.store_dir = real + "/store";
    dir.store_fd = open_store_folder(dir.fd->get(), "store", dir.store_dir, config.shared_cache, dir, config.inspect_only);
  }
  if (!dir.store_fd) {
    dir.store_dir.clear();
  }
  return dir;
}

bool follow_cache_dir(CacheDir& dir, const Config& config, const std::string& store_path)
{
  struct stat st {};
  if (::stat(dir.real.c_str(), &st) == 0 ? st.st_dev == dir.dev && st.st_ino == dir.ino
                                         : errno != ENOENT && errno != ENOTDIR) {
    return false;
  }
  constexpr std::string_view store = "/store";
  if (dir.store_dir == dir.real + std::string(store) && store_path != dir.store_dir && store_path.size() > store.size() &&
      std::string_view(store_path).substr(store_path.size() - store.size()) == store) {
    const std::string renamed = store_path.substr(0, store_path.size() - store.size());
    if (::stat(renamed.c_str(), &st) == 0 && st.st_dev == dir.dev && st.st_ino == dir.ino) {
      dir.real = renamed;
      dir.store_dir = store_path;
      return false;
    }
  }
  std::string real;
  const util::UniqueFd fresh = open_checked_folder(dir.real, dir.path, config.shared_cache, real);
  // Onto the descriptor number io_path names: every user of io_path (the mirror's thread too)
  // goes to the new folder from its next call on, with no path to hand around again.
  if (::fstat(fresh.get(), &st) != 0 || ::dup3(fresh.get(), dir.fd->get(), O_CLOEXEC) < 0) {
    const int error = errno;
    throw StoreError("cannot open the cache folder " + dir.path + " again: " + std::strerror(error), error);
  }
  dir.dev = st.st_dev;
  dir.ino = st.st_ino;
  return true;
}

std::string private_folder_problem(int fd, bool shared, bool strict)
{
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    return std::strerror(errno);
  }
  if (!S_ISDIR(st.st_mode)) {
    return "not a folder";
  }
  if (!shared && st.st_uid != ::geteuid()) {
    return "it belongs to uid " + std::to_string(st.st_uid);
  }
  if ((st.st_mode & (strict ? 077 : shared ? 002 : 022)) != 0) {
    return "its mode is " + octal(st.st_mode);
  }
  return {};
}

namespace {

bool roomy_tmpfs(const char* path)
{
  struct statfs fs {};
  constexpr unsigned long long k_room = 256ULL << 20;
  return ::statfs(path, &fs) == 0 && fs.f_type == TMPFS_MAGIC &&
         static_cast<unsigned long long>(fs.f_bavail) * static_cast<unsigned long long>(fs.f_bsize) >= k_room &&
         ::access(path, W_OK | X_OK) == 0;
}

} // namespace

void remove_dead_folders(const std::string& parent, const std::string& prefix)
{
  DIR* listing = ::opendir(parent.c_str());
  if (listing == nullptr) {
    return;
  }
  std::vector<std::string> dead;
  while (const dirent* entry = ::readdir(listing)) {
    const std::string name = entry->d_name;
    if (name.compare(0, prefix.size(), prefix) != 0) {
      continue;
    }
    char* end = nullptr;
    const long pid = std::strtol(name.c_str() + prefix.size(), &end, 10);
    struct stat st {};
    if (pid > 0 && *end == '-' && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH &&
        ::lstat((parent + "/" + name).c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == ::getuid()) {
      dead.push_back(name);
    }
  }
  ::closedir(listing);
  for (const auto& name : dead) {
    mirror::remove_tree(parent, name);
  }
}

TempFolder::TempFolder(const std::string& prefix, const std::string& what, bool in_memory)
{
  const char* tmp = std::getenv("TMPDIR");
  in_memory = in_memory && (tmp == nullptr || *tmp != '/') && roomy_tmpfs("/dev/shm");
  m_parent = tmp != nullptr && *tmp == '/' ? tmp : in_memory ? "/dev/shm" : "/tmp";
  std::string pattern = m_parent + "/" + prefix + "XXXXXX";
  if (in_memory) {
    static std::once_flag swept;
    std::call_once(swept, [&] { remove_dead_folders(m_parent, prefix); });
    pattern = m_parent + "/" + prefix + std::to_string(::getpid()) + "-XXXXXX";
  }
  if (::mkdtemp(pattern.data()) == nullptr) {
    throw Error("cannot create " + what + " under " + m_parent + ": " + std::strerror(errno));
  }
  m_path = pattern;
}

} // namespace kjit::cache
