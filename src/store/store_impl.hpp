// Store::Impl: the LMDB environment behind a Store, its guard, and its damage handling.
// Private to src/store/.
#pragma once

#include "config/log.hpp"
#include "store/blob_txn.hpp"
#include "store/check.hpp"
#include "store/committer.hpp"
#include "util/file_size_signal.hpp"
#include "store/stamp.hpp"
#include "store/store.hpp"

#include <kjit/error.hpp>

#include <atomic>
#include <functional>
#include <future>
#include <lmdb.h>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <sys/types.h>
#include <unistd.h>

namespace kjit::store {

// Thrown inside the store when LMDB or a check finds the environment's structure damaged; public
// calls catch it, move the store aside and carry on with a fresh one. Never leaves src/store/.
struct Damaged : StoreError {
  explicit Damaged(const std::string& why, int code = MDB_CORRUPTED) : StoreError(why, code) {}
};

// LMDB codes that mean the file is not a sound environment (as opposed to I/O errors, a full map…).
bool is_structural(int rc);

// Environment flags for the three ways a store is opened.
enum class Mode { writable, read_only, read_only_no_lock };

extern const char* const k_table_names[k_table_count];

struct Store::Impl {
  MDB_env* env = nullptr;
  MDB_dbi dbis[k_table_count] = {};
  bool has_table[k_table_count] = {};
  mutable std::shared_mutex guard;  // txns hold it shared; map changes and reopening hold it unique
  pid_t pid = 0;
  // `guard` held shared; not taken in a fork()ed child (its only thread), whose copy may have been
  // taken while a parent's thread held it unique (follow_path(), grow(), recover()): that thread
  // is not there to let it go, and the child's calls are refused (check_process()) or read fields.
  std::shared_lock<std::shared_mutex> shared_guard() const
  {
    if (pid != ::getpid()) {
      return std::shared_lock<std::shared_mutex>(guard, std::defer_lock);
    }
    return std::shared_lock<std::shared_mutex>(guard);
  }
  // For messages and the registry. Changed (with lmdb_path, a copy of it unless dir_fd is used)
  // only with the registry's mutex and `guard` unique held (renamed_to()): either one reads it.
  std::string path;
  const Store* owner = nullptr;  // the Store this is the Impl of (null while Store::open() makes it)
  std::string lmdb_path;  // what LMDB opens: /proc/self/fd/<dir_fd> when a checked descriptor was given
  int dir_fd = -1;        // owned (a dup of OpenOptions::dir_fd), closed with the Impl
  Mode mode = Mode::writable;
  OpenOptions options;
  const char* map_base = nullptr;  // the map, as of the last open/remap (guard held unique to change)
  std::size_t map_bytes = 0;
  std::atomic<std::size_t> checked_end{0};  // bytes of data.mdb known to exist (beyond: re-checked)
  int stale_readers = 0;           // reader slots of dead processes found at open (an unclean exit)
  std::uint64_t replaced = 0;      // environments replaced after damage
  dev_t data_dev = 0;              // identity of data.mdb when opened: a damaged store is moved
  ino_t data_ino = 0;              //   aside only if it is still the file this process opened
  std::atomic<std::uint64_t> generation{0};  // bumped by every reopen
  // The generation last walked: a process walks the store (isolated) before its first write, since
  // a write copies pages LMDB picks by fields a damaged page may hold (a SIGBUS no read would meet).
  std::atomic<std::uint64_t> walked{~std::uint64_t(0)};
  std::mutex ahead_mutex;
  std::future<std::pair<std::uint64_t, bool>> ahead;  // walk_ahead(): generation walked, sound
  bool retired = false;            // no environment: reads miss, writes are skipped
  // data.mdb as this process last knew it sound (walked, a matching stamp, or its own commits on
  // top of that), and the stamp it last wrote: the Store writes the stamp when it closes.
  std::mutex sound_mutex;
  std::optional<FileState> sound;
  std::optional<FileState> stamped;
  std::atomic<std::uint64_t> walks{0};  // check() calls (Store::walks())

  bool has_blob_tables() const
  {
    return has_table[static_cast<int>(Table::entries)] && has_table[static_cast<int>(Table::blobs)] &&
           has_table[static_cast<int>(Table::blob_refs)];
  }
  BlobDbis blob_dbis() const
  {
    return {dbis[static_cast<int>(Table::entries)], dbis[static_cast<int>(Table::blobs)],
            dbis[static_cast<int>(Table::blob_refs)]};
  }

  ~Impl();

  // data.mdb as it is now; nullopt once retired. Caller holds `guard`.
  std::optional<FileState> state_now() const { return retired ? std::nullopt : file_state(env); }
  // The mode of the files it creates (data.mdb, lock.mdb, its stamp): group-shared or private.
  mode_t file_mode() const { return options.access == Access::group ? 0660 : 0600; }

  // The value of `key` in `table` inside `txn` (a view valid while it lasts); false when missing.
  // Throws Damaged for a value outside data.mdb. Caller is inside read() or write().
  bool get_value(MDB_txn* txn, Table table, std::string_view key, std::string_view& bytes);

  // Opens `env` on `path` in `mode` with the tables; checks the file against the meta page.
  // Throws Damaged for a damaged file, StoreError otherwise. Caller holds `guard` unique (or owns Impl).
  void open_env(std::size_t map_size);
  void close_env() noexcept;
  // LMDB makes lock.mdb with ftruncate (no blocks on the disk) and writes it through its map: on a
  // full disk a write into a page without a block is a SIGBUS, not an error. The blocks are
  // allocated first (missing, short or sparse: else one stat). Throws StoreError when a full disk
  // leaves pages that LMDB's open writes without blocks (a missing or short file).
  void allocate_lock_file() const;
  // How data.mdb walks, in a child process (with or without the lock file: without it after an
  // open that failed with a structural code, sound when it was lock.mdb that LMDB refused);
  // not_run when the walk could not run (no memory to map data.mdb, no child): no verdict either
  // way. `detail` describes a damaged outcome (a crash, a time-out).
  Walk walk_isolated(std::size_t map_size, bool no_lock, std::string& detail) const;
  // Before this process reads a page of data.mdb (env open): walks it in a child unless it is as a
  // kjit process last knew it sound (the checked stamp) or holds only its meta pages. Throws
  // Damaged when the walk fails; without a verdict (no memory or process for it) it is read as is.
  void walk_unless_known_sound(std::size_t map_size);
  // Throws Damaged if data.mdb is shorter than the environment's last page. Caller holds `guard`.
  void check_file_size();
  // Writable stores keep data.mdb a sparse 256–512 KiB longer than its last page (see store_env.cpp).
  void keep_slack() noexcept;
  // True if [data, data+size) lies inside the part of the map backed by data.mdb (re-checks the file
  // once when it seems not to).
  bool inside_file(const void* data, std::size_t size);

  void check(int rc, const char* what) const;
  void check_process() const;

  // Begins a txn, adopting another process's map growth and clearing stale readers when the reader
  // table is full. Caller holds `guard` shared.
  MDB_txn* begin(unsigned flags, std::shared_lock<std::shared_mutex>& shared);
  // The map is full: grows it (bounded; at most once for threads that saw the same size). Throws
  // StoreError when it can't; a failed remap reopens the environment first.
  void grow(std::shared_lock<std::shared_mutex>& shared, std::size_t seen);
  // grow() with `guard` held unique: first clears reader slots of killed processes (they pin the
  // pages freed since their snapshot), and grows only if there were none.
  void grow_locked(std::size_t seen);
  // The largest map the address-space limit leaves room for (half of what is free), at most 1 TiB.
  std::size_t growth_limit(std::size_t current) const;
  // Closes and opens the environment again (same files); retires the store if that fails.
  // Caller holds `guard` unique.
  void reopen_locked(const std::string& why) noexcept;

  // After a commit that began on `before`: still sound if `before` was (no one else wrote between).
  void note_commit(const std::optional<FileState>& before) noexcept;

  // (Re)makes the folder `path` and, when the store goes through a descriptor, opens it again
  // (O_NOFOLLOW, this user's). Throws StoreError. Caller holds `guard` unique (or owns Impl).
  void open_folder();
  // True if `dir` no longer leads to the data.mdb this environment has open (it is gone, or
  // another file). One stat. Caller holds `guard`.
  bool lost_from(const std::string& dir) const;
  // True if `path` no longer leads to the data.mdb this environment has open (the folder was
  // deleted, replaced or renamed): writes would be lost to every other process. One stat.
  // Caller holds `guard`.
  bool moved_away() const;
  // The environment's folder was opened as `dir`, another name of its data.mdb: if `path` no
  // longer leads there (the folder was renamed to `dir`), `dir` becomes its path, where writes go
  // from now on (else follow_folder() would make a new store at the old name). Caller holds the
  // registry's mutex, not `guard`. Returns whether it did.
  bool renamed_to(const std::string& dir);
  // Closes the environment and opens the one `path` leads to now (made if missing); retires the
  // store if that fails. Caller holds `guard` unique and the registry's mutex (store.cpp).
  void follow_path() noexcept;

  // Moves the damaged environment aside (if it is still the one opened here), warns once and opens
  // a fresh one; retires the store if that fails. `seen` is the generation the failing call used.
  // Under the registry's mutex (store.cpp), as follow_folder(): an open() of the folder meanwhile
  // finds the damaged or the fresh file in this Store, never opens a second environment on it.
  void recover(const std::string& why, std::uint64_t seen) noexcept;
  // recover() with the registry's mutex held by the caller. `open_elsewhere(dev, ino)`: whether
  // another Store of this process has that file open (or is closing with it: called with `guard`
  // unique, it must never wait for a close); the file the folder leads to then is not opened here
  // (a second environment on it), the store is retired instead.
  void recover_locked(const std::string& why, std::uint64_t seen,
                      const std::function<bool(dev_t, ino_t)>& open_elsewhere) noexcept;

  static MDB_val val(std::string_view bytes) { return MDB_val{bytes.size(), const_cast<char*>(bytes.data())}; }
  static std::string_view view(const MDB_val& v) { return {static_cast<const char*>(v.mv_data), v.mv_size}; }

  // Runs `body(txn)` in a write txn, retrying after growing the map when it is full.
  template <typename Body>
  void write(Body&& body)
  {
    const util::FileSizeSignalBlock no_sigxfsz;  // past ulimit -f: an error, not the host killed
    const HoldsForCommits holds;  // LMDB's write lock, which every queued commit needs
    std::shared_lock shared = shared_guard();
    if (retired || env == nullptr) {
      return;
    }
    for (;;) {
      MDB_txn* txn = begin(0, shared);
      if (txn == nullptr) {
        return;  // retired meanwhile
      }
      MDB_envinfo info{};
      mdb_env_info(env, &info);
      const std::optional<FileState> before = file_state(env);  // no other writer until commit
      int rc = body(txn);
      if (rc == MDB_SUCCESS) {
        rc = mdb_txn_commit(txn);  // frees the txn whatever the result
      } else {
        mdb_txn_abort(txn);
      }
      if (rc == MDB_MAP_FULL) {
        grow(shared, info.me_mapsize);
        continue;
      }
      check(rc, "write transaction");
      keep_slack();
      note_commit(before);
      return;
    }
  }

  // Runs `body(txn)` in a read txn; `missing` is returned by a retired store.
  template <typename Body, typename Result>
  Result read(Body&& body, Result missing) const
  {
    auto* self = const_cast<Impl*>(this);
    std::shared_lock shared = self->shared_guard();
    if (retired || env == nullptr) {
      return missing;
    }
    MDB_txn* txn = self->begin(MDB_RDONLY, shared);
    if (txn == nullptr) {
      return missing;
    }
    struct Abort {
      MDB_txn* txn;
      ~Abort() { mdb_txn_abort(txn); }
    } abort{txn};
    return body(txn);
  }

  // Runs `call`; when it finds the store damaged, recovers and runs it once more (on the fresh
  // store); damage again retires the store and `missing` is returned.
  template <typename Call, typename Result>
  Result guarded(Call&& call, Result missing)
  {
    for (int attempt = 0; attempt < 2; ++attempt) {
      const std::uint64_t seen = generation.load();
      try {
        return call();
      } catch (const Damaged& e) {
        recover(e.what(), seen);
      }
    }
    return missing;
  }

  // One read transaction running `body(txn)`, guarded: false when the store is missing or damaged.
  template <typename Body>
  bool guarded_read(Body&& body)
  {
    return guarded([&] { return read(body, false); }, false);
  }
};

// Shared by store.cpp and the files that split it (store_repair.cpp, store_tables.cpp).
// Limits of a check in a child process: a walk of a 1 GiB store takes about a second (see
// docs/reliability.md); the child may map the store once more plus this much memory.
constexpr double k_check_seconds = 30.0;
constexpr std::size_t k_check_memory = std::size_t(1) << 30;
using log::warn_once;  // "warning: …" once per process (config/log.hpp)
// A meta row's value without its trailer, or nullopt if the trailer is missing or does not match.
std::optional<std::string_view> strip_meta_trailer(std::string_view stored);

} // namespace kjit::store
