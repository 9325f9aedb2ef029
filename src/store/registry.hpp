// The Stores open in this process, one per data.mdb (store.cpp's open() and destruction).
#pragma once

#include "store/store.hpp"

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <sys/types.h>
#include <vector>

namespace kjit::store {

// One environment per file per process (LMDB's rule: closing a second one drops the process's
// fcntl locks on lock.mdb). A Store is registered while it lives and found by the identity of the
// data.mdb it has open now (Store::has_file: a folder reached by another path, or renamed, is the
// same store; recover() and follow_folder() change the file and so move the key with it, under
// the registry's mutex, so that an open() meanwhile never opens a second environment on either
// file, and never onto a file another Store of this process has open). An
// expired entry is a Store being destroyed, its environment not yet closed: its deleter notes the
// file it has open (`closing`) before the close, and open() waits for the closes of that file or
// of that path (a recover() or follow_folder() during the close opens a new file there), and for
// those not noted yet; never for the close of another store (which waits for its commits: another
// process may hold that store's write lock for as long as it likes). Never destroyed, and fresh in
// a fork()ed child (util::ForkFresh): a parent's thread may have held or waited on the copies.
struct Registered {
  const Store* raw;
  std::weak_ptr<Store> store;
  std::string path;
  bool closing = false;  // expired, and the file below noted
  bool has_file = false;
  std::uint64_t dev = 0;
  std::uint64_t ino = 0;
};
struct Registry {
  std::mutex mutex;
  std::condition_variable closed;
  std::vector<Registered> stores;
};

// The process's registry.
Registry& registry();

// The live Store (other than `self`) whose environment has the file (dev, ino) open, or null.
// Waits for the closes in progress of that file or of `path` (see Registry; but never for
// `self`'s own, nor, when `self` is being closed itself, for any: its commits may be what another
// close waits for). Caller holds `lock`, and keeps the Store returned until it has let go of it:
// that reference may be the last one by then, and its deleter takes the registry's mutex.
std::shared_ptr<Store> find_open(Registry& stores, std::unique_lock<std::mutex>& lock, const std::string& path,
                                 dev_t dev, ino_t ino, const Store* self = nullptr);

// Whether a Store of this process other than `self` has the file (dev, ino) open, or is being
// closed with it open, without waiting for any close (for recover()). Caller holds the registry's mutex.
bool open_or_closing(const Registry& stores, dev_t dev, ino_t ino, const Store* self);

} // namespace kjit::store
