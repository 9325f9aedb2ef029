// Script records in the meta table: "script/<hash>" and "script-table/<hash>", each checksummed
// twice (the record's own XXH3 and the meta table's trailer).
#include "store/script_store.hpp"

namespace kjit::script {

std::shared_ptr<store::Store> store_of(const Cache& cache)
{
  if (!cache.has_disk_tier() || cache.store_path().empty()) {
    return nullptr;
  }
  // Store::open returns the environment the cache holds (one per path per process).
  return store::Store::open(cache.store_path(), store::Store::OpenOptions{});
}

std::optional<ScriptRecord> load_script(const store::Store& store, const std::string& hash)
{
  std::optional<ScriptRecord> record;
  store.visit(store::Table::meta, script_row(hash), [&](std::string_view bytes) { record = decode_script(bytes); });
  return record;
}

std::optional<TableRecord> load_table(const store::Store& store, const std::string& hash)
{
  std::optional<TableRecord> record;
  store.visit(store::Table::meta, table_row(hash), [&](std::string_view bytes) { record = decode_table(bytes); });
  return record;
}

void save_script(store::Store& store, const ScriptRecord& record)
{
  store.put(store::Table::meta, script_row(record.hash), encode(record));
}

void save_table(store::Store& store, const std::string& hash, const TableRecord& table)
{
  store.put(store::Table::meta, table_row(hash), encode(table));
}

std::vector<ScriptRecord> all_scripts(const store::Store& store)
{
  std::vector<ScriptRecord> out;
  store.for_each_prefix(store::Table::meta, k_script_prefix, [&](std::string_view, std::string_view bytes) {
    if (auto record = decode_script(bytes)) {
      out.push_back(std::move(*record));
    }
  });
  return out;
}

} // namespace kjit::script
