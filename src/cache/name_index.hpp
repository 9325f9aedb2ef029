// The key of an entry's row in the store's `names` table (its value is the program name), for code
// that adds or removes entries outside a lookup (import, prune). Must match persist() in lookup.cpp.
#pragma once

#include <string>
#include <string_view>

namespace kjit::cache {

inline std::string name_index_key(const std::string& program_name, std::string_view raw_key)
{
  return program_name + '\0' + std::string(raw_key);
}

} // namespace kjit::cache
