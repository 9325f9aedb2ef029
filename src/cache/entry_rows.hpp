// The stored entries as rows (raw key, record size, decoded record), their removal with
// everything that leads to them, and what folders take on disk: shared by the commands that
// operate a cache (inspect.cpp) and eviction (eviction.cpp).
#pragma once

#include <kjit/cache.hpp>

#include "store/entry.hpp"
#include "store/record.hpp"
#include "store/store.hpp"

#include <limits>
#include <string>
#include <string_view>
#include <sys/types.h>
#include <vector>

namespace kjit::cache {

// 64 hex digits of a raw 32-byte key.
std::string hex_of(std::string_view raw);

// Every decodable entry with its raw key and record size.
struct Row {
  std::string raw_key;
  std::size_t bytes;
  store::Entry entry;
};

// The records that decode and match `filter`; with `unreadable`, those that don't decode go
// there (key and size only).
std::vector<Row> decoded_rows(const store::Store* store, const EntryFilter& filter,
                              store::Sections sections = store::Sections::all, std::vector<Row>* unreadable = nullptr);

// Removes entries (store rows, name index, last uses, the rows that lead to them, the memory tier's
// copies, mirror folders) in one transaction per table.
void remove_rows(Cache::Impl& impl, const std::vector<const Row*>& rows);

// What a folder tree takes on disk (hard links counted once, as du does); a file with more than
// `max_links` links is not counted (it outlives the tree: a shared header another entry links too).
std::size_t allocated_bytes(const std::string& root, nlink_t max_links = std::numeric_limits<nlink_t>::max());

// Bytes the mirror folder of entry `hex` takes on disk (0 without one).
std::size_t mirror_bytes(const std::string& cache_dir, const std::string& hex);

} // namespace kjit::cache
