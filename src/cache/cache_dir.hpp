// Creating and vetting the cache folder before anything is stored in it.
#pragma once

#include <kjit/config.hpp>

#include "config/log.hpp"
#include "mirror/mirror.hpp"
#include "util/unique_handle.hpp"

#include <memory>
#include <string>
#include <sys/types.h>

namespace kjit::cache {

struct CacheDir {
  std::string path;       // as configured, for messages
  std::string real;       // resolved when it was checked: follow_cache_dir() looks there
  dev_t dev = 0;          // the folder `fd` is open on
  ino_t ino = 0;
  std::string io_path;    // /proc/self/fd/<n> of the checked folder: used for every access after the check
  std::shared_ptr<util::UniqueFd> fd;        // the checked cache folder
  std::string store_dir;                     // the store folder, for messages; empty: no disk tier
  std::shared_ptr<util::UniqueFd> store_fd;  // the checked store folder (LMDB opens through it)
  bool writable = false;
  bool store_absent = false;  // Config::inspect_only and no store made yet (none is made then)
  std::string store_problem;  // why there is no store (store_dir empty), as the warning said
};

// Creates config.cache_dir with mode 0700 if missing and vets it through descriptors:
// - the folder (opened with O_NOFOLLOW after resolving the configured path) must belong to the user
//   and not be writable by group/others, unless config.shared_cache (StoreError with an explanation);
// - every parent up to / must belong to root or the user and be writable by nobody else, unless it
//   is sticky (/tmp) — else another user could swap the folder (StoreError);
// - store/ (opened with openat + O_NOFOLLOW from the checked folder) and its files must be a
//   folder and plain files of the user (any member of the group when shared), not links, not
//   writable by others; a store that fails is not used (one warning, memory only: store_dir empty).
// On a network filesystem the store goes to a node-local folder ($XDG_RUNTIME_DIR/kjit, else
// /tmp/kjit-<uid>, created 0700 and refused — memory only — when it exists with another owner or a
// looser mode).
CacheDir open_cache_dir(const Config& config);

// When the folder was deleted, replaced or renamed (dir.real no longer leads to it): makes and
// checks it again as open_cache_dir() does and puts it under the same descriptor, so io_path
// leads there; returns true. But when the store inside it is now `store_path` (its path(): the
// folder was renamed and opened by its new name, store::Store::open), that new name, where the
// descriptor already leads, is the folder's from now on: the mirror stays with the store (returns
// false). One stat when it is still there. Not thread-safe; throws StoreError.
bool follow_cache_dir(CacheDir& dir, const Config& config, const std::string& store_path);

// Checks an existing folder opened as `fd`: the user's own (any owner when `shared`), writable by
// nobody else (`shared`: the group may write); `strict`: no group/other bits at all (a node-local
// folder in /tmp, as tmux and ssh want theirs). Returns the reason it fails, or "".
std::string private_folder_problem(int fd, bool shared, bool strict = false);

using log::warn_once;  // "warning: …" once per process (config/log.hpp)


// Removes the folders <parent>/<prefix><pid>-… of this user whose process is gone (killed while it
// compiled), without following symlinks: nothing else removes them from /dev/shm before the
// machine restarts.
void remove_dead_folders(const std::string& parent, const std::string& prefix);

// A fresh folder <TMPDIR or /tmp>/<prefix>XXXXXX (mode 0700), removed with everything in it
// (without following symlinks) when this goes away. Throws Error saying it was for `what`.
// `in_memory`: without TMPDIR, /dev/shm/<prefix><pid>-XXXXXX when /dev/shm is a tmpfs with
// 256 MiB free (for many small files that live for one compile: a vendored CCCL's 1 691 links or
// copies took ≈ 1 s to make and remove on ext4 here, next to nothing on tmpfs); the first one of a
// process removes those of dead processes (remove_dead_folders).
class TempFolder {
public:
  TempFolder(const std::string& prefix, const std::string& what, bool in_memory = false);
  ~TempFolder() { mirror::remove_tree(m_parent, m_path.substr(m_parent.size() + 1)); }
  TempFolder(const TempFolder&) = delete;
  TempFolder& operator=(const TempFolder&) = delete;
  const std::string& path() const { return m_path; }

private:
  std::string m_parent;
  std::string m_path;
};

} // namespace kjit::cache
