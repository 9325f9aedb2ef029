// Cache-folder safety: ownership, permissions, read-only folders, network filesystems.
#include "cache/cache_dir.hpp"

#include "config/log.hpp"
#include "store/location.hpp"
#include "util/file.hpp"

#include <kjit/error.hpp>

#include <cerrno>
#include <cstdio>
#include <ftw.h>
#include <mutex>
#include <set>
#include <sys/stat.h>
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

void warn_once(const std::string& message)
{
  static std::mutex mutex;
  static std::set<std::string> said;
  std::lock_guard lock(mutex);
  if (said.insert(message).second) {
    log::line("warning: " + message);
  }
}

CacheDir open_cache_dir(const Config& config)
{
  CacheDir dir;
  dir.path = config.cache_dir;
  const std::error_code created = util::create_directories(dir.path, 0700);
  struct stat st {};
  if (::stat(dir.path.c_str(), &st) != 0) {
    throw StoreError("cannot create the cache folder " + dir.path + ": " +
                       (created ? created.message() : std::string("it does not exist")),
                     created ? created.value() : ENOENT);
  }
  if (!S_ISDIR(st.st_mode)) {
    throw StoreError("the cache folder " + dir.path + " is not a folder", ENOTDIR);
  }
  if (!config.shared_cache) {
    if (st.st_uid != ::geteuid()) {
      throw StoreError("refusing the cache folder " + dir.path + ": it belongs to uid " + std::to_string(st.st_uid) +
                         ", not to you (uid " + std::to_string(::geteuid()) +
                         "); another user could plant kernels there. Set KJIT_SHARED_CACHE=1 if it is meant to be shared.",
                       EPERM);
    }
    if ((st.st_mode & 022) != 0) {
      throw StoreError("refusing the cache folder " + dir.path + ": its mode " + octal(st.st_mode) +
                         " lets group or others write kernels into it. chmod go-w it, or set KJIT_SHARED_CACHE=1 "
                         "if it is meant to be shared.",
                       EPERM);
    }
  }
  dir.writable = ::access(dir.path.c_str(), W_OK) == 0;
  std::string fs_name;
  const bool network = store::on_network_filesystem(dir.path, fs_name);
  dir.store_dir = store::store_dir_for(dir.path, network);
  if (network) {
    warn_once("the cache folder " + dir.path + " is on a network filesystem (" + fs_name +
              "), where LMDB is unsafe; the store goes to the node-local folder " + dir.store_dir +
              " (the mirror stays in the cache folder)");
  }
  return dir;
}

void remove_tree(const std::string& cache_dir, const std::string& relative)
{
  const std::string root = cache_dir + "/" + relative;
  struct stat st {};
  if (::lstat(root.c_str(), &st) != 0) {
    return;
  }
  if (!S_ISDIR(st.st_mode)) {
    std::ignore = ::unlink(root.c_str());
    return;
  }
  // FTW_PHYS: symlinks are removed as links, never followed.
  std::ignore = ::nftw(
    root.c_str(),
    [](const char* path, const struct stat*, int type, FTW*) {
      std::ignore = type == FTW_DP ? ::rmdir(path) : ::unlink(path);
      return 0;
    },
    32, FTW_DEPTH | FTW_PHYS);
}

} // namespace kjit::cache
