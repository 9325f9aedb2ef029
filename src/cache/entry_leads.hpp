// The rows that lead to an entry — its direct row (raw inputs → key) and its manifest (headers
// → key) — counted by KJIT_MAX_SIZE and removed with the entries they lead to.
#pragma once

#include "store/store.hpp"

#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace kjit::cache {

struct LeadBytes {
  std::size_t total = 0;  // keys and values of every `direct` and `manifests` row
  // Raw entry key → what removing it frees: its direct rows, and its share of its manifest (a
  // manifest named by n records counts 1/n to each).
  std::map<std::string, std::size_t, std::less<>> per_entry;
};
// Reads the `direct` and `manifests` tables (and, with `per_entry`, every record's manifest key).
LeadBytes lead_bytes(const store::Store& store, bool per_entry);

// The manifest keys of the records under `keys` (read before they are removed).
std::set<std::string> manifest_keys(const store::Store& store, const std::vector<std::string>& keys);

// After the records under `keys` were removed: deletes the direct rows naming them, and the
// manifests no remaining record names: `manifests` (their records' manifest keys) and any other
// (one a disk hit saved for another spelling of a program, whose record names its first one: it
// costs that spelling one header resolution, then is saved again).
void erase_leads(store::Store& store, const std::vector<std::string>& keys, const std::set<std::string>& manifests);

} // namespace kjit::cache
