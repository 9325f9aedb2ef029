// Opening, checking, growing and replacing the LMDB environment behind a Store. LMDB facts this
// relies on (lmdb.h, Caveats; mdb.c of 0.9):
// - MDB_MAP_FULL kills the write txn: abort, grow the map, retry;
// - another process growing the map gives MDB_MAP_RESIZED: adopt it with mdb_env_set_mapsize(env, 0);
// - mdb_env_set_mapsize unmaps and maps again; when mapping fails the environment keeps stale
//   pointers, so it is closed and opened again (never used as it is);
// - data.mdb always covers the last used page: a shorter file (a copy taken mid-write, a full disk)
//   would fault (SIGBUS) on first touch, so it is compared with the meta page before anything
//   reads the map;
// - stale reader slots of dead processes are cleared with mdb_reader_check (at open, when the
//   reader table is full, and before growing a full map: a stale slot pins every page freed since);
// - an environment must be opened once per process and never used across fork().
#include "store/store_impl.hpp"

#include "config/log.hpp"
#include "store/address_space.hpp"
#include "store/check.hpp"
#include "util/file_size_signal.hpp"
#include "util/file.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

namespace kjit::store {

const char* const k_table_names[k_table_count] = {"entries", "meta", "quarantine", "manifests", "names", "blobs", "blob_refs", "direct"};

namespace {

constexpr std::size_t k_slack = std::size_t(512) << 10;  // sparse tail kept past the last page
constexpr unsigned k_max_readers = 512;
// The size LMDB 0.9 gives lock.mdb for k_max_readers: MDB_txninfo (192 bytes on 64-bit, with its
// first reader slot) and the other slots, 64 bytes each (cache-line padded).
constexpr std::size_t k_lock_bytes = 192 + (k_max_readers - 1) * std::size_t(64);

// LMDB's page size as written in meta page 0 (MDB_meta.mm_dbs[FREE_DBI].md_pad), read with pread.
std::size_t stored_page_size(int fd)
{
  std::uint32_t psize = 0;
  if (::pread(fd, &psize, sizeof psize, 40) != static_cast<ssize_t>(sizeof psize)) {
    return 0;
  }
  return psize >= 512 && psize <= 65536 && (psize & (psize - 1)) == 0 ? psize : 0;
}

} // namespace

bool is_structural(int rc)
{
  switch (rc) {
  case MDB_CORRUPTED:
  case MDB_PAGE_NOTFOUND:
  case MDB_INVALID:
  case MDB_VERSION_MISMATCH:
  case MDB_BAD_TXN:
    return true;
  default:
    return false;
  }
}

Store::Impl::~Impl()
{
  close_env();
  if (dir_fd >= 0 && pid == ::getpid()) {
    ::close(dir_fd);
  }
}

void Store::Impl::close_env() noexcept
{
  // In a forked child the parent's environment must be left alone, not closed (lmdb.h).
  if (env != nullptr && pid == ::getpid()) {
    mdb_env_close(env);
  }
  env = nullptr;
  for (bool& has : has_table) {
    has = false;
  }
}

void Store::Impl::check(int rc, const char* what) const
{
  if (rc == MDB_SUCCESS) {
    return;
  }
  const std::string message = std::string(what) + " on " + path + ": " + mdb_strerror(rc);
  if (is_structural(rc)) {
    throw Damaged(message, rc);
  }
  throw StoreError(message, rc);
}

void Store::Impl::check_process() const
{
  if (pid != ::getpid()) {
    throw StoreError("the store at " + path + " was opened before fork(); open a new cache in the child", EINVAL);
  }
}

void Store::Impl::check_file_size()
{
  int fd = -1;
  check(mdb_env_get_fd(env, &fd), "mdb_env_get_fd");
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    throw StoreError("cannot stat " + path + "/data.mdb: " + std::strerror(errno), errno);
  }
  const std::size_t psize = stored_page_size(fd);
  const auto size = static_cast<std::size_t>(st.st_size);
  if (psize == 0 || size < 2 * psize) {
    throw Damaged(path + "/data.mdb: " + std::to_string(size) + " bytes, no valid meta pages", MDB_INVALID);
  }
  MDB_envinfo info{};
  mdb_env_info(env, &info);
  const std::size_t needed = (static_cast<std::size_t>(info.me_last_pgno) + 1) * psize;
  if (size < needed) {
    throw Damaged(path + "/data.mdb is truncated: " + std::to_string(size) + " bytes, its last page ends at " +
                    std::to_string(needed),
                  MDB_INVALID);
  }
  // open_env reads the tables right after (or did before a remap): reading the main table's first
  // page here reads no page that a lookup would not.
  map_base = map_address_from_a_page(env);
  if (map_base == nullptr) {
    map_base = map_address(env, data_dev, data_ino);
  }
  map_bytes = info.me_mapsize;
  checked_end = std::min(size, info.me_mapsize);
  keep_slack();
}

void Store::Impl::keep_slack() noexcept
{
  // A damaged page can make LMDB itself read up to 128 KiB past the page's start (16-bit node
  // offsets and key sizes) before any check of ours: with the file that much longer than its last
  // page, such a read lands in the file (zeros) instead of raising SIGBUS. The tail is sparse (no
  // disk space) and LMDB ignores it. The file is only ever made longer, and only inside a write
  // txn (no other writer can be appending pages meanwhile).
  if (mode != Mode::writable || env == nullptr) {
    return;
  }
  const util::FileSizeSignalBlock no_sigxfsz;  // a tail past ulimit -f is simply not made
  int fd = -1;
  const auto needed = [&]() -> std::size_t {
    struct stat st {};
    MDB_envinfo info{};
    if (mdb_env_get_fd(env, &fd) != MDB_SUCCESS || ::fstat(fd, &st) != 0 || mdb_env_info(env, &info) != MDB_SUCCESS) {
      return 0;
    }
    const std::size_t psize = stored_page_size(fd);
    const std::size_t end = (static_cast<std::size_t>(info.me_last_pgno) + 1) * psize;
    return psize != 0 && static_cast<std::size_t>(st.st_size) < end + k_slack / 2 ? end + k_slack : 0;
  };
  if (needed() == 0) {
    return;  // the common case: no txn at all
  }
  MDB_txn* txn = nullptr;
  if (mdb_txn_begin(env, nullptr, 0, &txn) != MDB_SUCCESS) {
    return;
  }
  if (const std::size_t target = needed(); target != 0) {
    struct stat st {};
    if (::fstat(fd, &st) == 0 && static_cast<std::size_t>(st.st_size) < target) {
      std::ignore = ::ftruncate(fd, static_cast<off_t>(target));
    }
  }
  mdb_txn_abort(txn);
}

bool Store::Impl::inside_file(const void* data, std::size_t size)
{
  if (map_base == nullptr) {
    return true;  // mapping unknown: the size check at open is all there is
  }
  const auto* p = static_cast<const char*>(data);
  if (p < map_base || static_cast<std::size_t>(p - map_base) > map_bytes ||
      size > map_bytes - static_cast<std::size_t>(p - map_base)) {
    return false;
  }
  const std::size_t end = static_cast<std::size_t>(p - map_base) + size;
  if (end <= checked_end.load()) {
    return true;
  }
  int fd = -1;
  struct stat st {};
  if (mdb_env_get_fd(env, &fd) != MDB_SUCCESS || ::fstat(fd, &st) != 0) {
    return false;
  }
  checked_end = std::min(static_cast<std::size_t>(st.st_size), map_bytes);
  return end <= checked_end.load();
}

void Store::Impl::open_env(std::size_t wanted_map_size)
{
  const std::size_t map_size = fitted_map_size(wanted_map_size);
  const util::FileSizeSignalBlock no_sigxfsz;  // creating data.mdb writes its meta pages
  check(mdb_env_create(&env), "mdb_env_create");
  mdb_env_set_maxdbs(env, 16);
  mdb_env_set_maxreaders(env, k_max_readers);
  mdb_env_set_mapsize(env, map_size);
  // MDB_NOMETASYNC: one fsync per commit instead of two; a crash may undo the last commit (a lost
  // cache entry, recompiled later) but never corrupts the store.
  unsigned flags = MDB_NOTLS;
  flags |= mode == Mode::writable ? MDB_NOMETASYNC : MDB_RDONLY;
  flags |= mode == Mode::read_only_no_lock ? MDB_NOLOCK : 0;
  struct stat before {};
  if (::stat((lmdb_path + "/data.mdb").c_str(), &before) == 0) {
    data_dev = before.st_dev;  // the file a failed open found damaged (moved aside by recover())
    data_ino = before.st_ino;
  }
  try {
    if (mode == Mode::writable) {
      allocate_lock_file();
    }
    const int rc = mdb_env_open(env, lmdb_path.c_str(), flags, file_mode());
    if (rc == ENOMEM) {
      throw StoreError("cannot map the store " + path + " (" + std::to_string(map_size) + " bytes" +
                         address_space_limit_text() + "): " + std::strerror(rc) +
                         "; lower KJIT_STORE_MAP_SIZE or raise the address-space limit (ulimit -v)",
                       rc);
    }
    std::string detail;
    const Walk without_lock =
      is_structural(rc) && mode != Mode::read_only_no_lock ? walk_isolated(map_size, true, detail) : Walk::damaged;
    if (without_lock == Walk::sound) {
      // LMDB checks lock.mdb before data.mdb: a lock file it can't use (damaged, or of another
      // LMDB build) while another process has the store open. The first opener once all have
      // closed makes it again; the data is not moved aside for it.
      throw StoreError("the lock file " + path + "/lock.mdb is not one this LMDB can use (" + mdb_strerror(rc) +
                         ": damaged, or made by another LMDB build while a process of it has the store open); "
                         "the store is left as it is and not used",
                       rc);
    }
    if (without_lock == Walk::not_run) {
      // No verdict (no memory to map data.mdb, no child): the refused file may be lock.mdb, which
      // another process is using; nothing is moved aside for it.
      throw StoreError("the store " + path + " could not be opened (" + mdb_strerror(rc) +
                         ") and its data could not be checked without its lock file (no memory or no "
                         "process for the walk); the store is left as it is and not used",
                       rc);
    }
    check(rc, "mdb_env_open");
    int fd = -1;
    mdb_env_get_fd(env, &fd);
    // LMDB leaves data.mdb's descriptor inheritable: compile workers and other children of the
    // host must not hold it.
    std::ignore = ::fcntl(fd, F_SETFD, FD_CLOEXEC);
    struct stat st {};
    if (::fstat(fd, &st) == 0) {
      data_dev = st.st_dev;
      data_ino = st.st_ino;
      if (options.access == Access::group && mode == Mode::writable && st.st_uid == ::geteuid()) {
        std::ignore = ::fchmod(fd, 0660);
        std::ignore = ::chmod((lmdb_path + "/lock.mdb").c_str(), 0660);
      }
    }
    // Reads trust LMDB's pages, and a page of garbage crashed every process inside LMDB (finding
    // the map's address below reads the main table, as do opening the tables and a lookup; issue 38).
    walk_unless_known_sound(map_size);
    check_file_size();
    if (mode != Mode::read_only_no_lock) {
      int dead = 0;
      mdb_reader_check(env, &dead);
      stale_readers = dead;
    }
    const bool writable = mode == Mode::writable;
    MDB_txn* txn = nullptr;
    // The tables are opened in a read transaction; a write transaction (LMDB's writer lock: a
    // process that only hits would wait behind another's commit) only to create missing ones.
    const auto begin_open_txn = [&](unsigned txn_flags) {
      for (;;) {
        const int begun = mdb_txn_begin(env, nullptr, txn_flags, &txn);
        if (begun == MDB_MAP_RESIZED) {  // another process grew the map while we opened it
          check(mdb_env_set_mapsize(env, 0), "mdb_env_set_mapsize (adopt)");
          check_file_size();
          continue;
        }
        check(begun, "mdb_txn_begin (open tables)");
        break;
      }
    };
    const auto open_tables = [&](unsigned create) {
      bool missing = false;
      for (int t = 0; t < k_table_count; ++t) {
        const int open_rc = mdb_dbi_open(txn, k_table_names[t], create, &dbis[t]);
        has_table[t] = open_rc == MDB_SUCCESS;
        missing = missing || open_rc == MDB_NOTFOUND;
        if (open_rc != MDB_SUCCESS && open_rc != MDB_NOTFOUND) {
          mdb_txn_abort(txn);
          check(open_rc == MDB_INCOMPATIBLE ? MDB_CORRUPTED : open_rc, "mdb_dbi_open");
        }
      }
      return missing;
    };
    bool creating = false;  // the tables, in a write transaction
    begin_open_txn(MDB_RDONLY);
    if (open_tables(0) && writable) {
      mdb_txn_abort(txn);
      txn = nullptr;
      // Creating a table writes into the main table's pages, which a damaged store may fill with
      // garbage (a crash inside LMDB): a store that holds data (an older format, or damage hiding
      // its tables) is walked, isolated, first.
      MDB_envinfo info{};
      mdb_env_info(env, &info);
      if (info.me_last_pgno > 1) {
        std::string detail;
        const Walk walk = walk_isolated(map_size, false, detail);
        if (walk == Walk::not_run) {
          // No verdict (no memory to map data.mdb, no child): nothing is moved aside for it.
          throw StoreError("the store " + path + " holds data but not kjit's tables, and it could not be "
                             "checked (no memory or no process for the walk); it is left as it is and not used",
                           ENOMEM);
        }
        if (walk == Walk::damaged) {
          throw Damaged("its tables are missing and its check failed (" + detail + ")", MDB_CORRUPTED);
        }
      }
      begin_open_txn(0);
      creating = true;
      if (open_tables(MDB_CREATE)) {
        mdb_txn_abort(txn);
        check(MDB_NOTFOUND, "mdb_dbi_open");
      }
    }
    // The first write transaction of a new file (LMDB's writer lock held: no one else wrote
    // before it) makes every page the store's tree reaches: known sound while data.mdb stays as
    // it left it, so this process's first write needs no walk (walk_or_trust(); a fork and a
    // walk on a fresh node's first remote hit).
    const bool made_here = creating && mdb_txn_id(txn) == 1;
    // Not synced: the tables of a new store are worth nothing to lose, and the first commit of
    // data syncs them with it. A power loss before that may leave a meta page naming pages never
    // written: the next opener's walk finds it damaged and makes a new one (the same empty store).
    // One fdatasync less for every new store (a fresh node's first remote hit had three).
    if (made_here) {
      mdb_env_set_flags(env, MDB_NOSYNC, 1);  // no other thread has this environment yet
    }
    const int committed = mdb_txn_commit(txn);
    if (made_here) {
      mdb_env_set_flags(env, MDB_NOSYNC, 0);
    }
    check(committed, "mdb_txn_commit (open tables)");
    if (made_here) {
      const std::optional<FileState> state = file_state(env);
      if (state && state->txnid == 1) {  // none wrote after it either
        std::lock_guard lock(sound_mutex);
        sound = state;
        // No stamp for it (as if written): its pages are not on the disk yet, and a stamp that
        // outlived a power loss would spare the next opener the walk that finds them missing.
        // The first commit of data syncs them and stamps what it leaves.
        stamped = state;
      }
    }
  } catch (...) {
    close_env();
    throw;
  }
}

void Store::Impl::allocate_lock_file() const
{
  const std::string file = lmdb_path + "/lock.mdb";
  struct stat st {};
  const bool exists = ::stat(file.c_str(), &st) == 0;
  if (exists && static_cast<std::size_t>(st.st_blocks) * 512 >= static_cast<std::size_t>(st.st_size) &&
      static_cast<std::size_t>(st.st_size) >= k_lock_bytes) {
    return;  // the common case: one stat
  }
  const int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, file_mode());
  if (fd < 0) {
    return;  // LMDB's open says why
  }
  // fallocate(2) itself, not posix_fallocate(): its emulation writes bytes other processes own.
  // A file with a size keeps it (FALLOC_FL_KEEP_SIZE: the blocks past its end are there for when
  // LMDB's first opener extends it): LMDB sizes its reader table by the file, and a process that
  // made it shorter (another LMDB program, fewer readers) maps only that much; slots past its
  // map, once others took them, crashed it when it scanned the table.
  struct stat opened {};
  const bool empty = ::fstat(fd, &opened) == 0 && opened.st_size == 0;
  const off_t size = std::max<off_t>(exists ? st.st_size : 0, static_cast<off_t>(k_lock_bytes));
  const int error = ::fallocate(fd, empty ? 0 : FALLOC_FL_KEEP_SIZE, 0, size) == 0 ? 0 : errno;
  ::close(fd);
  // A lock file of full size was made and used before: the pages LMDB writes when it opens are
  // there already (a reader slot never used before may not be: a sparse file of an older kjit).
  const bool pages_written_at_open = !exists || static_cast<std::size_t>(st.st_size) < k_lock_bytes;
  if ((error == ENOSPC || error == EDQUOT) && pages_written_at_open) {
    throw StoreError("no space left on device (disk full) for the lock file of the store " + path, error);
  }
}

MDB_txn* Store::Impl::begin(unsigned flags, std::shared_lock<std::shared_mutex>& shared)
{
  check_process();
  bool cleared = false;
  for (;;) {
    if (retired || env == nullptr) {
      return nullptr;
    }
    MDB_txn* txn = nullptr;
    const int rc = mdb_txn_begin(env, nullptr, flags, &txn);
    if (rc == MDB_MAP_RESIZED) {
      shared.unlock();
      {
        std::unique_lock exclusive(guard);
        if (!retired && env != nullptr) {
          if (const int set = mdb_env_set_mapsize(env, 0); set != MDB_SUCCESS) {
            reopen_locked("adopting another process's map growth failed: " + std::string(mdb_strerror(set)));
          } else {
            check_file_size();
          }
        }
      }
      shared.lock();
      continue;
    }
    if (rc == MDB_READERS_FULL && !cleared && (flags & MDB_RDONLY) != 0) {
      int dead = 0;
      mdb_reader_check(env, &dead);  // slots of killed processes
      cleared = true;
      continue;
    }
    check(rc, "mdb_txn_begin");
    return txn;
  }
}

void Store::Impl::reopen_locked(const std::string& why) noexcept
{
  MDB_envinfo info{};
  if (env != nullptr) {
    mdb_env_info(env, &info);
  }
  close_env();
  ++generation;
  try {
    open_env(std::max(options.initial_map_size, std::size_t(1) << 20));
  } catch (const std::exception& e) {
    retired = true;
    log::line("warning: the store " + path + " was closed (" + why + ") and cannot be opened again: " + e.what() +
              "; continuing without it (compiled kernels are kept in memory only)");
  }
}

void Store::Impl::recover_locked(const std::string& why, std::uint64_t seen,
                                 const std::function<bool(dev_t, ino_t)>& open_elsewhere) noexcept
{
  std::unique_lock exclusive(guard);
  if (generation.load() != seen || retired) {
    return;  // another thread already replaced it
  }
  close_env();
  ++generation;
  if (options.inspect_only) {
    retired = true;  // inspection never moves or replaces anything
    log::line("warning: the store " + path + " is damaged (" + why +
              "); left as it is (`kjit verify --repair` replaces it)");
    return;
  }
  ++replaced;
  std::string moved = "left in place: it is no longer the file this process opened";
  struct stat st {};
  struct stat folder {};
  struct stat named {};
  // Moved by name only if the name still leads to the folder this process checked and opened.
  const bool same_folder = dir_fd < 0 || (::fstat(dir_fd, &folder) == 0 && ::lstat(path.c_str(), &named) == 0 &&
                                          folder.st_dev == named.st_dev && folder.st_ino == named.st_ino);
  if (same_folder && ::stat((lmdb_path + "/data.mdb").c_str(), &st) == 0 && st.st_dev == data_dev &&
      st.st_ino == data_ino) {
    // A replacement earlier in the same second took the plain name: "-2", "-3"… after it.
    const std::string base = path + ".damaged-" + std::to_string(::time(nullptr)) + "-" + std::to_string(::getpid());
    std::string aside = base;
    int rc = ::rename(path.c_str(), aside.c_str());
    for (int n = 2; rc != 0 && (errno == ENOTEMPTY || errno == EEXIST) && n < 100; ++n) {
      aside = base + "-" + std::to_string(n);
      rc = ::rename(path.c_str(), aside.c_str());
    }
    moved = rc == 0 ? "moved aside to " + aside : "could not be moved aside: " + std::string(std::strerror(errno));
  }
  log::line("warning: the store " + path + " is damaged (" + why + "); " + moved +
            "; continuing with a fresh store (kernels are compiled again)");
  try {
    mode = mode == Mode::read_only_no_lock ? Mode::read_only : mode;
    open_folder();
    if (::stat((lmdb_path + "/data.mdb").c_str(), &st) == 0 && open_elsewhere(st.st_dev, st.st_ino)) {
      throw StoreError("the store there now is open in another Store of this process", ESTALE);
    }
    open_env(options.initial_map_size);
  } catch (const std::exception& e) {
    retired = true;
    log::line(std::string("warning: no fresh store could be opened in ") + path + ": " + e.what() +
              "; continuing without it (compiled kernels are kept in memory only)");
  }
}

void Store::Impl::open_folder()
{
  std::ignore = util::create_directories(path, options.access == Access::group ? 02770 : 0700);
  if (dir_fd < 0) {
    return;
  }
  const int fresh = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  struct stat mine {};
  if (fresh < 0 || ::fstat(fresh, &mine) != 0 || mine.st_uid != ::geteuid()) {
    if (fresh >= 0) {
      ::close(fresh);
    }
    throw StoreError("the store folder " + path + " is not this user's", EPERM);
  }
  ::close(dir_fd);
  dir_fd = fresh;
  lmdb_path = "/proc/self/fd/" + std::to_string(dir_fd);
}

bool Store::Impl::lost_from(const std::string& dir) const
{
  struct stat st {};
  if (::stat((dir + "/data.mdb").c_str(), &st) != 0) {
    return errno == ENOENT || errno == ENOTDIR;
  }
  return st.st_dev != data_dev || st.st_ino != data_ino;
}

bool Store::Impl::moved_away() const
{
  if (retired || env == nullptr || mode != Mode::writable || options.inspect_only) {
    return false;
  }
  return lost_from(path);
}

bool Store::Impl::renamed_to(const std::string& dir)
{
  const auto renamed = [&] { return !retired && env != nullptr && dir != path && lost_from(path); };
  {
    std::shared_lock shared = shared_guard();
    if (!renamed()) {
      return false;  // the common case: opened again by its own name
    }
  }
  std::unique_lock exclusive(guard);
  if (!renamed()) {
    return false;
  }
  if (lmdb_path == path) {
    lmdb_path = dir;  // (through a descriptor, LMDB's path follows the folder by itself)
  }
  path = dir;
  return true;
}

void Store::Impl::follow_path() noexcept
{
  close_env();
  ++generation;
  const std::string why = "its folder was deleted, replaced or renamed while this process had it open";
  try {
    open_folder();
    open_env(options.initial_map_size);
    log::line("note: the store " + path + " was reopened: " + why);
  } catch (const std::exception& e) {
    retired = true;
    log::line("warning: the store " + path + " was closed (" + why + ") and cannot be opened again: " + e.what() +
              "; continuing without it (compiled kernels are kept in memory only)");
  }
}

} // namespace kjit::store
