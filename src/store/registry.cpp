#include "store/registry.hpp"

#include "util/fork_safe.hpp"

namespace kjit::store {

namespace {

// Never destroyed, and fresh in a fork()ed child (util::ForkFresh).
const util::ForkFresh<Registry> g_registry;

} // namespace

Registry& registry()
{
  return *g_registry;
}

// The live Store (other than `self`) whose environment has the file (dev, ino) open, or null.
// Waits for the closes in progress of that file or of `path` (see Registry; but never for
// `self`'s own, nor, when `self` is being closed itself, for any: its commits may be what another
// close waits for). Caller holds `lock`, and keeps the Store returned until it has let go of it:
// that reference may be the last one by then, and its deleter takes the registry's mutex.
std::shared_ptr<Store> find_open(Registry& stores, std::unique_lock<std::mutex>& lock, const std::string& path,
                                 dev_t dev, ino_t ino, const Store* self)
{
  const auto file_dev = static_cast<std::uint64_t>(dev);
  const auto file_ino = static_cast<std::uint64_t>(ino);
  for (;;) {
    bool closing = false;
    bool self_closing = false;
    for (const Registered& entry : stores.stores) {
      // A live Store is asked through `raw` (alive while the mutex is held: its deleter takes it
      // before the delete), not through a reference taken here: dropped under the mutex, that
      // could be the last one, and its deleter would wait for the mutex for ever.
      std::shared_ptr<Store> store;
      if (!entry.store.expired() && entry.raw != self && entry.raw->has_file(file_dev, file_ino)) {
        store = entry.store.lock();
        if (store) {
          return store;
        }
      }
      if (entry.store.expired()) {
        const bool this_file = !entry.closing || entry.path == path ||
                               (entry.has_file && entry.dev == file_dev && entry.ino == file_ino);
        (entry.raw == self ? self_closing : closing) |= entry.raw == self || this_file;
      }
    }
    if (!closing || self_closing) {
      return nullptr;
    }
    stores.closed.wait(lock);
  }
}

// Whether a Store of this process other than `self` has the file (dev, ino) open, or is being
// closed with it open, without waiting for any close: for recover(), which holds its store's guard
// unique. find_open()'s wait there held every call of that store for as long as the other close
// took (its commits wait for a write lock another process may hold for as long as it likes), and
// deadlocked with an open() meanwhile (which asks each store for its file under the registry's
// mutex: the wait could never take that mutex back). Caller holds the registry's mutex.
bool open_or_closing(const Registry& stores, dev_t dev, ino_t ino, const Store* self)
{
  const auto file_dev = static_cast<std::uint64_t>(dev);
  const auto file_ino = static_cast<std::uint64_t>(ino);
  for (const Registered& entry : stores.stores) {
    if (entry.raw == self) {
      continue;
    }
    // Every Store not noted as closing is alive while the mutex is held (its deleter notes it
    // under the mutex before deleting it): asked through `raw`, never through a reference taken
    // here, which could be its last one and run its deleter under this mutex.
    if (entry.closing ? entry.has_file && entry.dev == file_dev && entry.ino == file_ino
                      : entry.raw->has_file(file_dev, file_ino)) {
      return true;
    }
  }
  return false;
}

} // namespace kjit::store
