// The LMDB store: one environment per file per process (found by data.mdb's identity), map
// growth, stale readers, read-only mode, and damage that never reaches the host (a damaged
// environment is moved aside and replaced).
#pragma once

#include "util/hash.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

namespace kjit {
class StoreError;
} // namespace kjit

namespace kjit::store {

class Committer;

// Named databases inside the environment.
enum class Table {
  entries,     // entry key (32 bytes) → record
  meta,        // text key → text value + checksum trailer (checked on read; see put())
  quarantine,  // entry key + ":" + unix time → reason "\n" damaged record (newest k_quarantine_rows kept)
  manifests,   // manifest key (program and options texts, resolution context) → manifest
  names,       // names_key(program name, entry key) → program name (entries by program name, for explain)
  blobs,       // sha256 of a header's content → that content, stored once (blobs.hpp; put() encodes it)
  blob_refs,   // sha256 of a blob → how many entries use it (garbage collection; blobs.hpp)
  direct,      // XXH3-128 of a program's raw inputs → entry key + those inputs (cache/direct_index.hpp)
};
constexpr int k_table_count = 8;
constexpr std::size_t k_quarantine_rows = 64;

// The `names` row of an entry: sha256(program name)[0..16) + entry key, so any name fits LMDB's
// 511-byte key limit. names_prefix() is what every row of one program name starts with.
std::string names_key(std::string_view program_name, std::string_view entry_key);
std::string names_prefix(std::string_view program_name);

// Who may use the store's folder and files besides the owner.
enum class Access {
  owner,  // folder 0700, files 0600
  group,  // a shared cache: folder 0770 (setgid), files 0660, so the folder's group can write too
};

// What a structure check of a store (walk in a child process) found.
struct CheckReport {
  bool ok = false;
  bool not_checked = false;  // the walk could not run (no child, no memory to map the store): no verdict
  std::string detail;     // why not, or what was walked
  std::size_t rows = 0;   // rows walked (0 when the child reports nothing)
  double ms = 0;          // wall time of the check, fork to exit
};

// Thread-safe. Every call is one short LMDB transaction. Raw LMDB types stay in src/store/.
// After fork() the child must not use a Store opened by its parent (calls throw StoreError;
// check() and quarantine(), which never throw, do nothing); the default cache reopens one by itself.
//
// Damage: a store whose structure is damaged (LMDB reports MDB_CORRUPTED, MDB_PAGE_NOTFOUND,
// MDB_INVALID…, data.mdb is shorter than its last page, a value lies outside the file, a check
// fails) is renamed to `<dir>.damaged-<unix time>-<pid>` (then `-2`, `-3`… in the same second),
// one warning is logged, and the call goes on with a fresh empty store in `dir`: a read misses, a
// write goes to the fresh store.
// Other failures (a full disk, I/O errors) throw StoreError.
class Store {
public:
  struct OpenOptions {
    std::size_t initial_map_size = std::size_t(1) << 30;
    Access access = Access::owner;
    int dir_fd = -1;  // an open, already checked descriptor of `dir`: every access goes through it
    // Inspection (read-only commands): opened read-only, and damage is reported, never repaired:
    // a store damaged at open is a StoreError, damage found later retires the store (calls then
    // read nothing); it is never moved aside or replaced.
    bool inspect_only = false;
  };
  // Opens (creating if needed) the environment in `dir`; the Store of this process that already
  // has the data.mdb found there open (by st_dev, st_ino: through any path) is returned instead,
  // and `dir` becomes its path() when its own no longer leads there (its folder was renamed).
  // A folder that can't be written is opened
  // read-only (hits served, writes skipped); without the lock file only on a read-only
  // filesystem, where nobody can be writing. A damaged environment is replaced (see above).
  // Throws StoreError if no store can be opened (the message names KJIT_STORE_MAP_SIZE when the
  // map can't be allocated).
  static std::shared_ptr<Store> open(const std::string& dir, const OpenOptions& options);
  static std::shared_ptr<Store> open(const std::string& dir, std::size_t initial_map_size)
  {
    return open(dir, OpenOptions{initial_map_size, Access::owner});
  }

  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;
  ~Store();

  bool writable() const noexcept { return m_writable; }
  // The store's folder (canonical): where it was opened, or the name it was last opened by after
  // its folder was renamed (see open()).
  std::string path() const;
  // The path that reaches the checked folder itself (/proc/self/fd/<n> when opened with dir_fd):
  // for files beside the environment, such as compile.lock.
  std::string io_path() const;
  std::size_t map_size() const;
  // Times the environment was replaced because it was damaged or its map could not grow.
  std::uint64_t replacements() const noexcept;

  std::optional<std::string> get(Table table, std::string_view key) const;
  // Calls `visit` with the value's bytes where LMDB maps them, inside the read transaction (they
  // are valid only during the call; don't call the store from it). Returns false if not found.
  bool visit(Table table, std::string_view key, const std::function<void(std::string_view value)>& visit) const;
  // visit() of each of `keys` in one read transaction, `visit` told the key's index; not for `meta`
  // (a miss's 1 691 header blobs: one transaction, not one each).
  void visit_each(Table table, const std::vector<std::string>& keys,
                  const std::function<void(std::size_t index, std::string_view value)>& visit) const;
  // Two lookups in one read transaction: `follow` turns the value of `key` in `first` into a key
  // of `second` (nullopt: stop there; a view that stays valid through the call), whose value is
  // passed to `visit` as visit() does. Returns
  // false if either row is missing or `follow` stopped. Neither table may be `meta`.
  bool visit_chained(Table first, std::string_view key,
                     const std::function<std::optional<std::string_view>(std::string_view value)>& follow, Table second,
                     const std::function<void(std::string_view value)>& visit) const;

  struct Row {
    Table table;
    std::string key;
    std::string value;
    bool encoded = false;  // a `blobs` row whose value is encode_blob()'s already (blobs.hpp)
    // A `blobs` row without its content, whose value is the header's path: an intact blob under
    // the key should be there already; one gone meanwhile (a prune, an eviction) is stored again
    // from that file if it still hashes to the key, else the write fails (StoreError) and stores
    // none of its rows.
    bool present = false;
    // A `meta` row whose value is a whole number to add to the number its stored value starts
    // with (the rest of that value kept): a count that writers of any process keep up to date in
    // their own commits. A row that is not there, or does not start with a number, is left as it
    // is (a count is begun by a plain row).
    bool added = false;
  };
  // Stores the rows, in any tables, in one write transaction (the first write of a process walks
  // the store first, see check()). No-op when read-only. A `blobs` row carries the raw content
  // under its SHA-256: the store encodes it (compressed, checksummed) unless an intact blob is
  // already there, which is kept as it is; one marked `encoded` carries the blob itself. A
  // `blob_refs` row (blob_ref_key(): blob ‖ entry) is no row but a use: an entry the store did not
  // hold adds one to the blob's count (blob_txn.hpp), once per blob. `meta` values
  // get a checksum trailer that get()/visit() verify and strip: a damaged meta value reads as
  // missing (and is rebuilt by its owner), never as a wrong value. Throws StoreError when the
  // write fails (a full disk says "no space left on device"; a map that can't grow says so).
  void put(const std::vector<Row>& rows);
  // put() on the Store's writer thread (store/committer.hpp): returns at once; the thread commits
  // the rows (fdatasync included), then runs `done` there with nullptr or the StoreError put()
  // would have thrown. Commits run in queue order. Every other call of this Store (except from
  // `done`) first waits for the commits queued before it, so this process reads what it queued;
  // the Store's destruction and process exit (exit(), quick_exit()) wait for them all (_exit()
  // and kill lose those not yet committed). `done` must not wait for anything a caller of this Store may hold.
  void put_later(std::vector<Row> rows, std::function<void(const StoreError*)> done);
  // Commits put_later() has run so far.
  std::uint64_t later_commits() const noexcept;
  // Returns once the commits put_later() queued so far are in (at once in a forked child).
  void settle() const noexcept;
  // Starts, in the background, the walk this process's first put() needs (see check()), so that it
  // runs while the caller compiles; put() waits for it. No-op once walked, or when read-only.
  void walk_ahead();
  void put(Table table, std::string_view key, std::string_view value)
  {
    put({Row{table, std::string(key), std::string(value)}});
  }
  // Moves a damaged entry aside: if the entry under `key` still holds exactly `bytes`, one
  // transaction writes the quarantine row (trimming the table to k_quarantine_rows) and deletes it;
  // a record another process has stored meanwhile is left alone. Writing into a B-tree that holds a
  // damaged record may itself meet damage, so it runs in a child process after a structure walk
  // (time and memory bounded); if either fails the whole store is replaced. Returns true if the
  // store no longer holds `bytes` under `key`. Never throws.
  bool quarantine(std::string_view key, std::string_view bytes, const std::string& reason);
  // Walks every table in a child process (time and memory bounded), reading every key and value
  // and checking overflow pages. `repair`: replace the store if the walk fails. Never throws.
  CheckReport check(bool repair);
  // Calls `visit` for every row of `table` (inside one read transaction; don't call the store from it).
  void for_each(Table table, const std::function<void(std::string_view key, std::string_view value)>& visit) const;
  // Calls `visit` for every row of `table` whose key starts with `prefix`, in key order.
  void for_each_prefix(Table table, std::string_view prefix,
                       const std::function<void(std::string_view key, std::string_view value)>& visit) const;
  // Deletes the rows of `table` with these keys, in one transaction. Deleting `entries` also
  // takes them from their blobs' counts and deletes every blob no other entry uses (same
  // transaction).
  void erase(Table table, const std::vector<std::string>& keys);
  std::size_t count(Table table) const;
  // The bytes of the pages `table` takes (branch, leaf, overflow): one mdb_stat, no walk.
  std::size_t table_bytes(Table table) const;
  // Empties `table`; emptying `entries` empties `blobs` and `blob_refs` too.
  void clear(Table table);

  struct BlobSweep {
    std::size_t refs_added = 0;    // counts set to what the records use (missing or wrong)
    std::size_t refs_removed = 0;  // rows removed: pair rows (before counts), counts of unused blobs
    std::size_t blobs_removed = 0; // blobs no entry refers to
  };
  // Makes `blob_refs` count exactly what the records use and removes unused blobs, in
  // one write transaction (kjit verify --repair). No-op when read-only. Throws StoreError.
  BlobSweep sweep_blobs();

  // check() calls of this Store (its own, before a first write, at open after an unclean exit);
  // before a first write, a store whose "checked" stamp matches data.mdb (written by the last
  // process that wrote it after walking it) is not walked again.
  std::uint64_t walks() const noexcept;

  // Whether this store's environment has the file with this identity (st_dev, st_ino) open now.
  // For the registry of stores (one environment per file per process).
  bool has_file(std::uint64_t dev, std::uint64_t ino) const;

  struct Impl;

private:
  // Before each write: follow_folder(), then walk_before_first_write().
  void before_write();
  // If `path()` no longer leads to the data.mdb open here (the folder was deleted,
  // replaced or renamed), the environment is closed and the one at `path()` opened (made if
  // missing): writes never go to a file no other process will read. Throws StoreError if another
  // Store of this process has that one open.
  void follow_folder();
  Store(std::unique_ptr<Impl> impl, bool writable);
  // Before this process's first write to an environment: check() it (isolated), replacing it if
  // damaged. A write copies pages LMDB finds through fields a damaged page may hold.
  void walk_before_first_write();
  // The stamp says data.mdb is as a sound process left it (if `trust_stamp`), or else
  // check(true) walks it (and stamps it when sound). Returns the walk's report.
  CheckReport walk_or_trust(bool trust_stamp);
  struct TableSize {
    std::size_t entries = 0;
    std::size_t bytes = 0;  // branch, leaf and overflow pages
  };
  // One mdb_stat of `table` (zero when it is missing), without waiting for the queue.
  TableSize table_size(Table table) const;
  // put() without waiting for the queue (the writer thread's commits).
  void write_rows(const std::vector<Row>& rows);
  std::unique_ptr<Impl> m_impl;
  bool m_writable;
  std::unique_ptr<Committer> m_committer;  // put_later()'s thread
};

} // namespace kjit::store
