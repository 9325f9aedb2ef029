// stored_scripts(): every script record of a cache's store with its table, for `kjit script`.
#include "store/script_store.hpp"

#include <algorithm>
#include <tuple>

namespace kjit {

std::vector<ScriptSummary> stored_scripts(const Cache& cache)
{
  std::vector<ScriptSummary> out;
  const auto store = script::store_of(cache);
  if (!store) {
    return out;
  }
  for (script::ScriptRecord& record : script::all_scripts(*store)) {
    ScriptSummary s;
    s.name = record.name;
    s.folder = script_folder_name(record.name);
    s.hash = record.hash;
    s.arch = record.arch;
    s.name_expression = record.name_expression;
    s.space = std::move(record.space);
    s.size_names = std::move(record.size_names);
    s.schedules = std::move(record.schedules);
    s.created_unix = record.created_unix;
    if (auto table = script::load_table(*store, record.hash)) {
      s.fingerprint = table->fingerprint;
      s.table = table->rows();
    }
    out.push_back(std::move(s));
  }
  std::sort(out.begin(), out.end(),
            [](const ScriptSummary& a, const ScriptSummary& b) { return std::tie(a.name, a.hash) < std::tie(b.name, b.hash); });
  return out;
}

} // namespace kjit
