// The structure walk of a store, meant to run in a child process (see isolated.hpp).
#pragma once

#include "util/test_hook.hpp"

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <sys/types.h>

struct MDB_env;  // lmdb.h's

namespace kjit::store {

// Where `env` maps the file (dev, ino) (offset 0), from /proc/self/maps; nullptr if it is not.
// LMDB does not say (MDB_envinfo.me_mapaddr is only MDB_FIXEDMAP's address). A forked child also
// holds its parent's mapping of the same file: with several, the mapping that holds a key `env`
// returns is taken (a read of the main table: the first one only when the store has no key at
// all); with one, it is taken without reading a page (the caller's pages are not walked yet).
// `inside`: a pointer LMDB gave into env's map (a key read in a transaction the caller holds);
// when null, one is read in a transaction of its own, which another process's map growth can
// refuse (MDB_MAP_RESIZED), leaving no way to tell the maps apart.
const char* map_address(MDB_env* env, dev_t dev, ino_t ino, const char* inside = nullptr);

// Where `env`'s map starts, found without /proc/self/maps (whose read costs ≈ 35 µs of CPU time
// here: the kernel writes out every mapping of the process): from the page that holds the main
// table's first key, read through the map as any lookup reads it, which names its own page
// number. Checked: the page is a leaf within the file, and the start is mapped and is meta page
// 0 of an LMDB file. nullptr when any of it does not hold (no key yet, a page size the map is
// not aligned to, a damaged page): then map_address() says.
const char* map_address_from_a_page(MDB_env* env);

// Opens its own environment on `dir` (read-only; `no_lock` without the lock file; a map of what
// data.mdb holds; map growth by other processes adopted, as the Store does) and reads every
// key and value of every table and every list of the free-page table, checking that each value lies
// inside data.mdb, that large values sit on well-formed overflow pages and that free pages exist.
// Returns sound with `rows` counted, or what it found with `why`.
// May crash or loop on a damaged file: run it isolated.
enum class Walk {
  sound,
  damaged,  // (or it crashed, or timed out, when run isolated)
  not_run,  // opening or mapping it failed for a reason that says nothing about the store (no
            // memory under ulimit -v, no descriptor left, a full reader table): no verdict
};
Walk walk_store(const std::string& dir, bool no_lock, std::size_t& rows, std::string& why);

// Test hook: called by walk_store() between reading data.mdb's last page (from its newest meta
// page) and measuring the file, twice (at the open and in the walk's snapshot): another process
// may commit there and grow the file. Empty for none.
KJIT_TEST_HOOK void set_measure_hook(std::function<void()> hook);

// In a fresh writable environment on `dir`: if `entries[key]` still holds exactly `bytes`, writes
// the quarantine row, trims the quarantine table to `keep` rows and deletes the entry, in one
// transaction (growing the map when it is full). Returns MDB_SUCCESS, or LMDB's code (MDB_INVALID
// when the environment could not be opened) with `why`.
int quarantine_in_place(const std::string& dir, std::size_t map_size, std::string_view key, std::string_view bytes,
                        std::string_view row_key, std::string_view row, std::size_t keep, std::string& why);

} // namespace kjit::store
