// The key of an entry's row in the store's `names` table, for code that adds or removes entries
// outside a lookup (import, prune). Must match the row persist() writes in lookup.cpp.
#pragma once

#include <string>
#include <string_view>

namespace kjit::cache {

inline std::string name_index_key(const std::string& program_name, std::string_view raw_key)
{
  return program_name + '\0' + std::string(raw_key);
}

} // namespace kjit::cache
