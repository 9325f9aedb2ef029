// The store's LMDB map growing when full: by doubling, within the address space the process has
// (RLIMIT_AS) and a 1 TiB cap.
#include "store/store_impl.hpp"

#include "store/address_space.hpp"

#include <algorithm>
#include <optional>
#include <unistd.h>

namespace kjit::store {

namespace {

constexpr std::size_t k_max_map = std::size_t(1) << 40;  // growth stops at 1 TiB whatever the limits

} // namespace

std::size_t Store::Impl::growth_limit(std::size_t current) const
{
  std::size_t limit = std::max(current, k_max_map);
  if (const std::optional<std::size_t> room = address_space_room()) {
    // The remap needs the new size while the old one is gone; leave the host half of what is left.
    limit = std::min(limit, current + *room / 2);
  }
  return limit;
}

void Store::Impl::grow(std::shared_lock<std::shared_mutex>& shared, std::size_t seen)
{
  shared.unlock();
  {
    std::unique_lock exclusive(guard);
    grow_locked(seen);
  }  // (the shared lock is taken again only once the unique one is gone: glibc refuses it inside)
  shared.lock();
}

void Store::Impl::grow_locked(std::size_t seen)
{
  if (retired || env == nullptr) {
    return;
  }
  MDB_envinfo info{};
  mdb_env_info(env, &info);
  if (info.me_mapsize > seen) {
    return;  // threads that hit a full map together grow it once
  }
  int dead = 0;
  if (mode != Mode::read_only_no_lock && mdb_reader_check(env, &dead) == MDB_SUCCESS && dead > 0) {
    // A reader killed inside its transaction held the oldest snapshot: every page freed since was
    // kept. Its slot is cleared: the retry reuses those pages instead of growing the map.
    return;
  }
  const std::size_t limit = growth_limit(info.me_mapsize);
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  // Doubling, but at least 16 pages at a time (a tiny map would otherwise creep).
  const std::size_t next = std::min(std::max(info.me_mapsize * 2, info.me_mapsize + 16 * page), limit);
  if (next < info.me_mapsize + page) {
    throw StoreError("the store " + path + " is full: its map of " + std::to_string(info.me_mapsize) +
                       " bytes cannot grow within the address-space limit (ulimit -v) or the 1 TiB cap; "
                       "set KJIT_STORE_MAP_SIZE or remove entries",
                     MDB_MAP_FULL);
  }
  if (const int rc = mdb_env_set_mapsize(env, next / page * page); rc != MDB_SUCCESS) {
    reopen_locked("growing the map to " + std::to_string(next) + " bytes failed: " + mdb_strerror(rc));
    throw StoreError("cannot grow the map of the store " + path + " to " + std::to_string(next) +
                       " bytes: " + mdb_strerror(rc) + "; the store was reopened at its old size "
                       "(KJIT_STORE_MAP_SIZE, ulimit -v)",
                     rc);
  }
  check_file_size();
}

} // namespace kjit::store
