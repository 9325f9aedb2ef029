// The rows that lead to an entry — its direct row (raw inputs → key) and its manifest (headers
// → key) — counted by KJIT_MAX_SIZE and removed with the entries they lead to.
#pragma once

#include "store/store.hpp"

#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
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

// The key of a manifest's head (deps/manifest_head.hpp) in the `manifests` table: its manifest's
// key and "h" (33 bytes); it goes with its manifest. The manifest key of a head's key (nullopt:
// the key is a manifest's own).
std::string manifest_head_key(std::string_view manifest_key);
std::optional<std::string_view> manifest_of_head(std::string_view key);

// The manifest keys of the records under `keys` (read before they are removed).
std::set<std::string> manifest_keys(const store::Store& store, const std::vector<std::string>& keys);

// After the records under `keys` were removed: deletes the direct rows naming them, and the
// manifests no remaining record names: `manifests` (their records' manifest keys) and any other
// (one a disk hit saved for another spelling of a program, whose record names its first one: it
// costs that spelling one header resolution, then is saved again).
void erase_leads(store::Store& store, const std::vector<std::string>& keys, const std::set<std::string>& manifests);

} // namespace kjit::cache
