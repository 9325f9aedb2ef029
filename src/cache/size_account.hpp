// What one Cache knows of its store's size, for the size limit (size_limit.cpp), and the keys it
// served since it last wrote their last use. Two locks: a hit notes its key under `uses_mutex`
// without waiting for a count.
#pragma once

#include "util/hash.hpp"

#include <cstddef>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_set>

namespace kjit::cache {

struct SizeAccount {
  std::mutex uses_mutex;
  std::unordered_set<util::Sha256, util::DigestHash> used;  // keys served by a disk hit since the last flush

  std::mutex mutex;                     // guards the count below
  std::size_t estimate = 0;             // bytes of records + mirror, from a full count and this process's writes
  bool counted = false;                 // whether `estimate` had its full count
  std::size_t blob_table_bytes = 0;     // the header blobs' pages when `estimate` was last updated
  std::size_t unseen_blob_bound = 0;    // the most the writes since then can have added to them
  std::size_t queued_mirror_bytes = 0;  // what queued mirror folders will take (mirror_entry's guess)
  std::optional<std::string> count_row;  // a full count's row value, stored with the next write

};

} // namespace kjit::cache
