// The Store's public calls: one short transaction each, damage handled by Impl::guarded().
#include "store/store.hpp"

#include "config/log.hpp"
#include "store/blob_txn.hpp"
#include "store/check.hpp"
#include "store/committer.hpp"
#include "util/file_size_signal.hpp"
#include "store/isolated.hpp"
#include "store/registry.hpp"
#include "store/store_impl.hpp"
#include "util/file.hpp"
#include "util/fork_safe.hpp"
#include "util/hash.hpp"
#include "util/stopwatch.hpp"

#include <algorithm>
#include <cerrno>
#include <fcntl.h>
#include <climits>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <mutex>
#include <set>
#include <sys/statvfs.h>
#include <sys/stat.h>
#include <system_error>
#include <unistd.h>

namespace kjit::store {

namespace {

bool is_permission_error(int rc)
{
  return rc == EACCES || rc == EROFS || rc == EPERM;
}

bool on_read_only_filesystem(const std::string& dir, int dir_fd)
{
  struct statvfs info {};
  const int rc = dir_fd >= 0 ? ::fstatvfs(dir_fd, &info) : ::statvfs(dir.c_str(), &info);
  return rc == 0 && (info.f_flag & ST_RDONLY) != 0;
}

} // namespace

std::string names_prefix(std::string_view program_name)
{
  const util::Sha256 digest = util::sha256(program_name);
  return std::string(reinterpret_cast<const char*>(digest.data()), 16);
}

std::string names_key(std::string_view program_name, std::string_view entry_key)
{
  return names_prefix(program_name) + std::string(entry_key);
}

Store::Store(std::unique_ptr<Impl> impl, bool writable)
  : m_impl(std::move(impl)), m_writable(writable), m_committer(std::make_unique<Committer>())
{
  m_impl->owner = this;
}

void Store::Impl::recover(const std::string& why, std::uint64_t seen) noexcept
{
  Registry& stores = registry();
  const HoldsForCommits holds;  // the registry, and then the guard
  std::unique_lock lock(stores.mutex);
  recover_locked(why, seen, [&](dev_t dev, ino_t ino) { return open_or_closing(stores, dev, ino, owner); });
}

Store::~Store()
{
  if (m_impl->pid != ::getpid()) {
    // A fork()ed child's copy: walk_ahead()'s thread is the parent's, and its future would wait
    // for it for ever. Left alone, as the LMDB environment is (Impl::close_env).
    new std::future<std::pair<std::uint64_t, bool>>(std::move(m_impl->ahead));  // NOLINT: leaked
    return;
  }
  m_committer.reset();  // its queued commits first: the stamp below names data.mdb after them
  {
    std::lock_guard lock(m_impl->ahead_mutex);
    if (m_impl->ahead.valid()) {
      m_impl->ahead.wait();  // it walks this store
    }
  }
  Impl& impl = *m_impl;
  if (!m_writable || impl.pid != ::getpid()) {
    return;
  }
  // The stamp, if data.mdb is still as this process last knew it sound (after its own commits):
  // the next process's first write then needs no walk.
  std::shared_lock shared = impl.shared_guard();
  const std::optional<FileState> now = impl.state_now();
  std::lock_guard lock(impl.sound_mutex);
  if (now && impl.sound == now && impl.stamped != now) {
    write_stamp(impl.lmdb_path, *now, impl.file_mode());
  }
}

std::uint64_t Store::walks() const noexcept
{
  return m_impl->walks.load();
}

void Store::Impl::note_commit(const std::optional<FileState>& before) noexcept
{
  std::lock_guard lock(sound_mutex);
  if (sound && before && *sound == *before) {
    sound = file_state(env);
    if (sound && stamped != sound) {
      // Stamped now, not only when the Store closes: a process opening the store meanwhile (while
      // a long-lived host keeps writing) trusts it instead of walking it before its first read.
      write_stamp(lmdb_path, *sound, file_mode());
      stamped = sound;
    }
  } else {
    sound.reset();  // another process wrote meanwhile: no stamp from this one
  }
}

CheckReport Store::walk_or_trust(bool trust_stamp)
{
  Impl& impl = *m_impl;
  std::optional<FileState> before;
  std::string dir;
  {
    std::shared_lock shared = impl.shared_guard();
    before = impl.state_now();
    dir = impl.lmdb_path;
  }
  if (trust_stamp && before) {
    // data.mdb as this process last knew it sound (a store it made), or as a stamp says.
    bool known = false;
    {
      std::lock_guard lock(impl.sound_mutex);
      known = impl.sound == before;
    }
    if (known || stamp_matches(dir, *before)) {
      std::lock_guard lock(impl.sound_mutex);
      impl.sound = before;
      impl.stamped = known ? impl.stamped : before;
      CheckReport trusted;
      trusted.ok = true;
      trusted.detail = known ? "not walked: unchanged since this process knew it sound" : "not walked: its checked stamp matches";
      return trusted;
    }
  }
  CheckReport report = check(true);
  if (!report.ok) {
    return report;  // replaced by a fresh store (or retired)
  }
  std::shared_lock shared = impl.shared_guard();
  const std::optional<FileState> after = impl.state_now();
  if (before && after == before) {  // nothing wrote while the walk ran
    std::lock_guard lock(impl.sound_mutex);
    impl.sound = before;
    impl.stamped = before;
    write_stamp(impl.lmdb_path, *before, impl.file_mode());
  }
  return report;
}

std::shared_ptr<Store> Store::open(const std::string& dir, const OpenOptions& options)
{
  const int folder_mode = options.access == Access::group ? 02770 : 0700;
  // A folder given by its descriptor exists (the Cache made, opened and checked it): no stat for
  // create_directories, and its path from the descriptor (the registry's key, as realpath says).
  std::error_code mkdir_error;
  if (options.dir_fd < 0) {
    mkdir_error = util::create_directories(dir, folder_mode);
  }
  const std::string path = options.dir_fd >= 0 ? util::canonical_path(dir, options.dir_fd) : util::canonical_path(dir);
  Registry& stores = registry();
  const HoldsForCommits holds;  // the registry, which a commit following its folder needs
  std::shared_ptr<Store> found;  // let go of after the mutex (find_open())
  std::unique_lock lock(stores.mutex);
  struct stat data {};
  if (::fstatat(options.dir_fd >= 0 ? options.dir_fd : AT_FDCWD,
                options.dir_fd >= 0 ? "data.mdb" : (path + "/data.mdb").c_str(), &data, 0) == 0) {
    if (auto existing = find_open(stores, lock, path, data.st_dev, data.st_ino)) {
      if (existing->m_impl->renamed_to(path)) {
        for (Registered& entry : stores.stores) {
          entry.path = entry.raw == existing.get() ? path : entry.path;
        }
      }
      return existing;
    }
  }
  if (mkdir_error && !is_permission_error(mkdir_error.value())) {
    throw StoreError("cannot create the store folder " + dir + ": " + mkdir_error.message(), mkdir_error.value());
  }
  if (options.access == Access::group) {
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && st.st_uid == ::geteuid() && (st.st_mode & 07777) != 02770) {
      std::ignore = ::chmod(path.c_str(), 02770);
    }
  }

  auto impl = std::make_unique<Impl>();
  impl->pid = ::getpid();
  impl->path = path;
  impl->options = options;
  impl->lmdb_path = path;
  if (options.dir_fd >= 0) {
    impl->dir_fd = ::fcntl(options.dir_fd, F_DUPFD_CLOEXEC, 3);
    if (impl->dir_fd < 0) {
      throw StoreError("cannot use the store folder " + path + ": " + std::strerror(errno), errno);
    }
    impl->lmdb_path = "/proc/self/fd/" + std::to_string(impl->dir_fd);
  }
  // Writable, then read-only with the lock file. Without the lock file only on a read-only
  // filesystem: anywhere else its owner may be writing, and lock-free reads would see pages change.
  std::vector<Mode> modes{Mode::writable, Mode::read_only};
  if (options.inspect_only) {
    modes.erase(modes.begin());
  }
  if (on_read_only_filesystem(impl->lmdb_path, impl->dir_fd)) {
    modes.push_back(Mode::read_only_no_lock);
  }
  for (std::size_t i = 0;; ++i) {
    impl->mode = modes[i];
    try {
      impl->open_env(options.initial_map_size);
      break;
    } catch (const Damaged& e) {
      if (options.inspect_only) {
        throw StoreError("the store " + path + " is damaged (" + e.what() +
                           "); left as it is: `kjit verify --repair` replaces it",
                         e.code());
      }
      impl->generation = 1;
      impl->recover_locked(e.what(), 1, [&](dev_t dev, ino_t ino) {  // moved aside, a fresh one opened (or retired)
        found = find_open(stores, lock, path, dev, ino);
        return found != nullptr;
      });
      if (impl->retired) {
        throw StoreError(std::string("the store ") + path + " is damaged and no fresh one can be made: " + e.what(),
                         e.code());
      }
      break;
    } catch (const StoreError& e) {
      if (!is_permission_error(e.code()) || i + 1 == modes.size()) {
        throw;
      }
    }
  }
  if (!impl->retired) {
    // The file was not there when looked for, or was replaced since: if it is one this process
    // has open after all, the environment just opened is left open, unused (closing it would
    // drop the other's locks).
    if (auto existing = find_open(stores, lock, path, impl->data_dev, impl->data_ino)) {
      impl->env = nullptr;  // NOLINT: leaked on purpose
      return existing;
    }
  }
  const bool writable = impl->mode == Mode::writable;
  const bool unclean = impl->stale_readers > 0;
  Store* raw = new Store(std::move(impl), writable);
  const pid_t opener = ::getpid();
  auto store = std::shared_ptr<Store>(raw, [opener](Store* s) {
    if (opener != ::getpid()) {
      delete s;  // a fork()ed child's copy: not in this process's registry (~Store leaves it alone)
      return;
    }
    // Its expired entry makes open() wait until the environment is closed, for this file and
    // path only: noted here, before the close. Not under the mutex: the commits it waits for
    // may need it (follow_folder()).
    Registry& stores = registry();
    const auto entry_of = [&stores, s](bool noted) {
      return std::find_if(stores.stores.begin(), stores.stores.end(), [s, noted](const Registered& entry) {
        return entry.raw == s && entry.store.expired() && (noted || !entry.closing);
      });
    };
    {
      const HoldsForCommits holds;  // the registry
      std::lock_guard lock(stores.mutex);
      if (const auto it = entry_of(false); it != stores.stores.end()) {
        const Impl& impl = *s->m_impl;
        std::shared_lock shared = impl.shared_guard();  // (a recover() in progress ends first)
        it->has_file = !impl.retired && impl.env != nullptr;
        it->dev = static_cast<std::uint64_t>(impl.data_dev);
        it->ino = static_cast<std::uint64_t>(impl.data_ino);
        it->closing = true;
      }
      stores.closed.notify_all();  // an open() of another store waits no more
    }
    delete s;
    std::lock_guard lock(stores.mutex);
    if (const auto it = entry_of(true); it != stores.stores.end()) {
      stores.stores.erase(it);
    }
    stores.closed.notify_all();
  });
  stores.stores.push_back(Registered{raw, store, path});
  lock.unlock();
  if (unclean) {
    // Readers of killed processes were found: a process died inside the store. Walk it once,
    // whatever its stamp says; a sound walk also stands for the walk before the first write.
    const std::uint64_t seen = store->m_impl->generation.load();
    const CheckReport report = store->walk_or_trust(false);
    if (!report.ok) {
      log::line("warning: the store " + path + " failed its check after an unclean exit: " + report.detail);
    } else if (store->m_writable) {
      store->m_impl->walked = seen;
    }
  }
  return store;
}

std::size_t Store::map_size() const
{
  std::shared_lock shared = m_impl->shared_guard();
  if (m_impl->retired || m_impl->env == nullptr) {
    return 0;
  }
  MDB_envinfo info{};
  mdb_env_info(m_impl->env, &info);
  return info.me_mapsize;
}

std::string Store::path() const
{
  std::shared_lock shared = m_impl->shared_guard();
  return m_impl->path;
}

std::string Store::io_path() const
{
  std::shared_lock shared = m_impl->shared_guard();
  return m_impl->lmdb_path;
}

std::uint64_t Store::replacements() const noexcept
{
  std::shared_lock shared = m_impl->shared_guard();
  return m_impl->replaced;
}

std::optional<std::string> Store::get(Table table, std::string_view key) const
{
  std::optional<std::string> value;
  visit(table, key, [&value](std::string_view bytes) { value.emplace(bytes); });
  return value;
}

bool Store::Impl::get_value(MDB_txn* txn, Table table, std::string_view key, std::string_view& bytes)
{
  const int t = static_cast<int>(table);
  if (!has_table[t]) {
    return false;
  }
  MDB_val k = val(key);
  MDB_val v{};
  const int rc = mdb_get(txn, dbis[t], &k, &v);
  if (rc == MDB_NOTFOUND) {
    return false;
  }
  check(rc, "mdb_get");
  if (!inside_file(v.mv_data, v.mv_size)) {
    throw Damaged("a value of " + path + " lies outside data.mdb");
  }
  bytes = view(v);
  return true;
}

bool Store::visit(Table table, std::string_view key, const std::function<void(std::string_view)>& visit) const
{
  m_committer->settle();
  Impl& impl = *m_impl;
  return impl.guarded_read([&](MDB_txn* txn) {
    std::string_view bytes;
    if (!impl.get_value(txn, table, key, bytes)) {
      return false;
    }
    if (table == Table::meta) {
      const auto value = strip_meta_trailer(bytes);
      if (!value) {
        warn_once("a damaged value in the meta table of " + impl.path + " is ignored and will be rebuilt");
        return false;
      }
      bytes = *value;
    }
    visit(bytes);
    return true;
  });
}

void Store::visit_each(Table table, const std::vector<std::string>& keys,
                       const std::function<void(std::size_t, std::string_view)>& visit) const
{
  m_committer->settle();
  Impl& impl = *m_impl;
  impl.guarded_read([&](MDB_txn* txn) {
    for (std::size_t i = 0; i < keys.size(); ++i) {
      if (std::string_view bytes; impl.get_value(txn, table, keys[i], bytes)) {
        visit(i, bytes);
      }
    }
    return true;
  });
}

bool Store::visit_chained(Table first, std::string_view key,
                          const std::function<std::optional<std::string_view>(std::string_view)>& follow, Table second,
                          const std::function<void(std::string_view)>& visit) const
{
  m_committer->settle();
  Impl& impl = *m_impl;
  return impl.guarded_read([&](MDB_txn* txn) {
    std::string_view bytes;
    if (!impl.get_value(txn, first, key, bytes)) {
      return false;
    }
    const std::optional<std::string_view> next = follow(bytes);
    if (!next || !impl.get_value(txn, second, *next, bytes)) {
      return false;
    }
    visit(bytes);
    return true;
  });
}

void Store::walk_ahead()
{
  if (!m_writable || m_impl->walked.load() == m_impl->generation.load() || m_impl->pid != ::getpid()) {
    return;
  }
  std::lock_guard lock(m_impl->ahead_mutex);
  if (!m_impl->ahead.valid()) {
    try {
      m_impl->ahead = std::async(std::launch::async, [this] {
        const std::uint64_t seen = m_impl->generation.load();
        return std::make_pair(seen, walk_or_trust(true).ok);  // a damaged store is replaced here
      });
    } catch (const std::system_error&) {
      // No thread can be started: walk_before_first_write() walks on the caller's thread.
    }
  }
}

void Store::walk_before_first_write()
{
  std::future<std::pair<std::uint64_t, bool>> ahead;
  {
    std::lock_guard lock(m_impl->ahead_mutex);
    ahead = std::move(m_impl->ahead);
  }
  if (ahead.valid()) {
    const auto [seen, sound] = ahead.get();
    m_impl->walked = sound ? seen : m_impl->generation.load();
  }
  const std::uint64_t now = m_impl->generation.load();
  if (m_impl->walked.load() != now) {
    const bool sound = walk_or_trust(true).ok;  // a damaged store is replaced by a fresh one here
    m_impl->walked = sound ? now : m_impl->generation.load();
  }
}

bool Store::has_file(std::uint64_t dev, std::uint64_t ino) const
{
  std::shared_lock shared = m_impl->shared_guard();  // waits for a recover() or follow_path() in progress
  return !m_impl->retired && m_impl->env != nullptr && static_cast<std::uint64_t>(m_impl->data_dev) == dev &&
         static_cast<std::uint64_t>(m_impl->data_ino) == ino;
}

void Store::follow_folder()
{
  Impl& impl = *m_impl;
  if (impl.pid != ::getpid()) {
    return;  // a fork()ed child: the write is refused (Impl::begin)
  }
  {
    std::shared_lock shared = impl.shared_guard();
    if (!impl.moved_away()) {
      return;
    }
  }
  Registry& stores = registry();
  const HoldsForCommits holds;  // the registry, and then the guard
  std::shared_ptr<Store> other;  // let go of after the mutex (find_open())
  std::unique_lock lock(stores.mutex);  // no open() of the file meanwhile
  struct stat now {};
  if (::stat((impl.path + "/data.mdb").c_str(), &now) == 0 &&
      (other = find_open(stores, lock, impl.path, now.st_dev, now.st_ino, this))) {
    throw StoreError("the store folder " + impl.path +
                       " was replaced while this process had it open, and the new one is open in another "
                       "Store of this process: nothing more is written through this one",
                     ESTALE);
  }
  std::unique_lock exclusive(impl.guard);
  if (impl.moved_away()) {  // (another thread of this Store may have followed it already)
    impl.follow_path();
  }
}

void Store::before_write()
{
  follow_folder();
  walk_before_first_write();
}

void Store::settle() const noexcept
{
  m_committer->settle();
}

} // namespace kjit::store
