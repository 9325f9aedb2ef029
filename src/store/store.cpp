// LMDB behind the Store interface. LMDB facts this relies on (lmdb.h, Caveats):
// - MDB_MAP_FULL kills the write txn: abort, double the map, retry;
// - another process growing the map gives MDB_MAP_RESIZED: adopt it with mdb_env_set_mapsize(env, 0);
// - mdb_env_set_mapsize needs no live txn in this process: txns hold m_guard shared, resizes unique;
// - stale reader slots of dead processes are cleared with mdb_reader_check at open;
// - an environment must be opened once per process and never used across fork().
#include "store/store.hpp"

#include <kjit/error.hpp>

#include "config/log.hpp"
#include "util/file.hpp"

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <lmdb.h>
#include <map>
#include <mutex>
#include <sys/stat.h>
#include <unistd.h>

namespace kjit::store {

struct Store::Impl {
  MDB_env* env = nullptr;
  MDB_dbi dbis[k_table_count] = {};
  bool has_table[k_table_count] = {};
  mutable std::shared_mutex guard;
  pid_t pid = 0;
  std::string path;

  ~Impl()
  {
    // In a forked child the parent's environment must be left alone, not closed (lmdb.h).
    if (env != nullptr && pid == ::getpid()) {
      mdb_env_close(env);
    }
  }

  void check(int rc, const char* what) const
  {
    if (rc != MDB_SUCCESS) {
      throw StoreError(std::string(what) + " on " + path + ": " + mdb_strerror(rc), rc);
    }
  }

  void check_process() const
  {
    if (pid != ::getpid()) {
      throw StoreError("the store at " + path + " was opened before fork(); open a new cache in the child", EINVAL);
    }
  }

  // Begins a txn, adopting another process's map growth if needed. Caller holds `guard` shared.
  MDB_txn* begin(unsigned flags, std::shared_lock<std::shared_mutex>& shared)
  {
    check_process();
    for (;;) {
      MDB_txn* txn = nullptr;
      const int rc = mdb_txn_begin(env, nullptr, flags, &txn);
      if (rc == MDB_MAP_RESIZED) {
        shared.unlock();
        {
          std::unique_lock exclusive(guard);
          check(mdb_env_set_mapsize(env, 0), "mdb_env_set_mapsize");
        }
        shared.lock();
        continue;
      }
      check(rc, "mdb_txn_begin");
      return txn;
    }
  }

  void grow(std::shared_lock<std::shared_mutex>& shared)
  {
    shared.unlock();
    {
      std::unique_lock exclusive(guard);
      MDB_envinfo info{};
      mdb_env_info(env, &info);
      check(mdb_env_set_mapsize(env, info.me_mapsize * 2), "mdb_env_set_mapsize (grow)");
    }
    shared.lock();
  }

  MDB_val val(std::string_view bytes) const { return MDB_val{bytes.size(), const_cast<char*>(bytes.data())}; }
  static std::string_view view(const MDB_val& v) { return {static_cast<const char*>(v.mv_data), v.mv_size}; }

  // Runs `body(txn)` in a write txn, retrying after growing the map when it is full.
  template <typename Body>
  void write(Body&& body)
  {
    std::shared_lock shared(guard);
    for (;;) {
      MDB_txn* txn = begin(0, shared);
      int rc = body(txn);
      if (rc == MDB_SUCCESS) {
        rc = mdb_txn_commit(txn);  // frees the txn whatever the result
      } else {
        mdb_txn_abort(txn);
      }
      if (rc == MDB_MAP_FULL) {
        grow(shared);
        continue;
      }
      check(rc, "write transaction");
      return;
    }
  }

  template <typename Body>
  auto read(Body&& body) const
  {
    auto* self = const_cast<Impl*>(this);
    std::shared_lock shared(self->guard);
    MDB_txn* txn = self->begin(MDB_RDONLY, shared);
    struct Abort {
      MDB_txn* txn;
      ~Abort() { mdb_txn_abort(txn); }
    } abort{txn};
    return body(txn);
  }
};

namespace {

constexpr const char* k_table_names[k_table_count] = {"entries", "meta", "quarantine", "manifests", "names"};

std::mutex g_registry_mutex;
std::map<std::pair<std::string, pid_t>, std::weak_ptr<Store>> g_registry;

bool is_permission_error(int rc)
{
  return rc == EACCES || rc == EROFS || rc == EPERM;
}

std::string canonical(const std::string& dir)
{
  char buffer[PATH_MAX];
  return ::realpath(dir.c_str(), buffer) != nullptr ? std::string(buffer) : dir;
}

} // namespace

Store::Store(std::unique_ptr<Impl> impl, std::string path, bool writable)
  : m_impl(std::move(impl)), m_path(std::move(path)), m_writable(writable)
{
}

Store::~Store() = default;

std::shared_ptr<Store> Store::open(const std::string& dir, std::size_t initial_map_size)
{
  std::error_code mkdir_error = util::create_directories(dir, 0700);
  const std::string path = canonical(dir);
  std::lock_guard lock(g_registry_mutex);
  const auto registry_key = std::make_pair(path, ::getpid());
  if (auto existing = g_registry[registry_key].lock()) {
    return existing;
  }
  if (mkdir_error && !is_permission_error(mkdir_error.value())) {
    throw StoreError("cannot create the store folder " + dir + ": " + mkdir_error.message(), mkdir_error.value());
  }

  auto impl = std::make_unique<Impl>();
  impl->pid = ::getpid();
  impl->path = path;
  // Writable, then read-only, then read-only without the lock file (a read-only mount or a
  // folder of another user): no process can be writing there, so no lock is needed.
  // MDB_NOMETASYNC: one fsync per commit instead of two; a crash may undo the last commit (a lost
  // cache entry, recompiled later) but never corrupts the store.
  const unsigned attempts[] = {MDB_NOTLS | MDB_NOMETASYNC, MDB_NOTLS | MDB_RDONLY, MDB_NOTLS | MDB_RDONLY | MDB_NOLOCK};
  int rc = ENOENT;
  unsigned flags = 0;
  for (unsigned attempt : attempts) {
    if (impl->env != nullptr) {
      mdb_env_close(impl->env);
      impl->env = nullptr;
    }
    impl->check(mdb_env_create(&impl->env), "mdb_env_create");
    mdb_env_set_maxdbs(impl->env, 8);
    mdb_env_set_maxreaders(impl->env, 512);
    mdb_env_set_mapsize(impl->env, initial_map_size);
    flags = attempt;
    rc = mdb_env_open(impl->env, path.c_str(), flags, 0600);
    if (rc == MDB_SUCCESS || !is_permission_error(rc)) {
      break;
    }
  }
  impl->check(rc, "mdb_env_open");
  const bool writable = (flags & MDB_RDONLY) == 0;
  if ((flags & MDB_NOLOCK) == 0) {
    int dead = 0;
    mdb_reader_check(impl->env, &dead);
  }

  MDB_txn* txn = nullptr;
  impl->check(mdb_txn_begin(impl->env, nullptr, writable ? 0 : MDB_RDONLY, &txn), "mdb_txn_begin (open tables)");
  for (int t = 0; t < k_table_count; ++t) {
    const int open_rc = mdb_dbi_open(txn, k_table_names[t], writable ? MDB_CREATE : 0, &impl->dbis[t]);
    if (open_rc == MDB_SUCCESS) {
      impl->has_table[t] = true;
    } else if (!(open_rc == MDB_NOTFOUND && !writable)) {
      mdb_txn_abort(txn);
      impl->check(open_rc, "mdb_dbi_open");
    }
  }
  impl->check(mdb_txn_commit(txn), "mdb_txn_commit (open tables)");

  auto store = std::shared_ptr<Store>(new Store(std::move(impl), path, writable));
  g_registry[registry_key] = store;
  return store;
}

std::size_t Store::map_size() const
{
  MDB_envinfo info{};
  mdb_env_info(m_impl->env, &info);
  return info.me_mapsize;
}

std::optional<std::string> Store::get(Table table, std::string_view key) const
{
  std::optional<std::string> value;
  visit(table, key, [&value](std::string_view bytes) { value.emplace(bytes); });
  return value;
}

bool Store::visit(Table table, std::string_view key, const std::function<void(std::string_view)>& visit) const
{
  const int t = static_cast<int>(table);
  if (!m_impl->has_table[t]) {
    return false;
  }
  return m_impl->read([&](MDB_txn* txn) {
    MDB_val k = m_impl->val(key);
    MDB_val v{};
    const int rc = mdb_get(txn, m_impl->dbis[t], &k, &v);
    if (rc == MDB_NOTFOUND) {
      return false;
    }
    m_impl->check(rc, "mdb_get");
    visit(Impl::view(v));
    return true;
  });
}

void Store::put(const std::vector<Row>& rows)
{
  if (!m_writable || rows.empty()) {
    return;
  }
  m_impl->write([&](MDB_txn* txn) {
    for (const Row& row : rows) {
      MDB_val k = m_impl->val(row.key);
      MDB_val v = m_impl->val(row.value);
      if (const int rc = mdb_put(txn, m_impl->dbis[static_cast<int>(row.table)], &k, &v, 0); rc != MDB_SUCCESS) {
        return rc;
      }
    }
    return MDB_SUCCESS;
  });
}

void Store::quarantine(std::string_view key, std::string_view bytes, const std::string& reason)
{
  if (!m_writable) {
    return;
  }
  const std::string row_key = std::string(key) + ":" + std::to_string(::time(nullptr));
  const std::string row = reason + "\n" + std::string(bytes);
  m_impl->write([&](MDB_txn* txn) {
    MDB_val qk = m_impl->val(row_key);
    MDB_val qv = m_impl->val(row);
    if (const int rc = mdb_put(txn, m_impl->dbis[static_cast<int>(Table::quarantine)], &qk, &qv, 0); rc != MDB_SUCCESS) {
      return rc;
    }
    MDB_val k = m_impl->val(key);
    const int rc = mdb_del(txn, m_impl->dbis[static_cast<int>(Table::entries)], &k, nullptr);
    return rc == MDB_NOTFOUND ? MDB_SUCCESS : rc;
  });
}

void Store::for_each(Table table, const std::function<void(std::string_view, std::string_view)>& visit) const
{
  for_each_prefix(table, {}, visit);
}

void Store::for_each_prefix(Table table, std::string_view prefix,
                            const std::function<void(std::string_view, std::string_view)>& visit) const
{
  const int t = static_cast<int>(table);
  if (!m_impl->has_table[t]) {
    return;
  }
  m_impl->read([&](MDB_txn* txn) {
    MDB_cursor* cursor = nullptr;
    m_impl->check(mdb_cursor_open(txn, m_impl->dbis[t], &cursor), "mdb_cursor_open");
    MDB_val k = m_impl->val(prefix);
    MDB_val v{};
    for (int rc = mdb_cursor_get(cursor, &k, &v, prefix.empty() ? MDB_FIRST : MDB_SET_RANGE); rc == MDB_SUCCESS;
         rc = mdb_cursor_get(cursor, &k, &v, MDB_NEXT)) {
      if (Impl::view(k).substr(0, prefix.size()) != prefix) {
        break;
      }
      visit(Impl::view(k), Impl::view(v));
    }
    mdb_cursor_close(cursor);
    return 0;
  });
}

void Store::erase(Table table, const std::vector<std::string>& keys)
{
  if (!m_writable || keys.empty()) {
    return;
  }
  const MDB_dbi dbi = m_impl->dbis[static_cast<int>(table)];
  m_impl->write([&](MDB_txn* txn) {
    for (const auto& key : keys) {
      MDB_val k = m_impl->val(key);
      const int rc = mdb_del(txn, dbi, &k, nullptr);
      if (rc != MDB_SUCCESS && rc != MDB_NOTFOUND) {
        return rc;
      }
    }
    return MDB_SUCCESS;
  });
}

std::size_t Store::count(Table table) const
{
  const int t = static_cast<int>(table);
  if (!m_impl->has_table[t]) {
    return 0;
  }
  return m_impl->read([&](MDB_txn* txn) {
    MDB_stat stat{};
    m_impl->check(mdb_stat(txn, m_impl->dbis[t], &stat), "mdb_stat");
    return static_cast<std::size_t>(stat.ms_entries);
  });
}

void Store::clear(Table table)
{
  if (!m_writable) {
    return;
  }
  const MDB_dbi dbi = m_impl->dbis[static_cast<int>(table)];
  m_impl->write([&](MDB_txn* txn) { return mdb_drop(txn, dbi, 0); });
}

} // namespace kjit::store
