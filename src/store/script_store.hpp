// Reading and writing script records through the store's meta table (one transaction per update).
#pragma once

#include "store/script_record.hpp"
#include "store/store.hpp"

#include <kjit/cache.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kjit::script {

// The cache's store (the one environment this process has open for its path), or null when the
// cache has no disk tier.
std::shared_ptr<store::Store> store_of(const Cache& cache);

std::optional<ScriptRecord> load_script(const store::Store& store, const std::string& hash);
std::optional<TableRecord> load_table(const store::Store& store, const std::string& hash);
// Each is one write transaction; a read-only store skips it. Throws StoreError.
void save_script(store::Store& store, const ScriptRecord& record);
void save_table(store::Store& store, const std::string& hash, const TableRecord& table);
// Every script record that decodes (damaged ones are left out), in key order.
std::vector<ScriptRecord> all_scripts(const store::Store& store);

} // namespace kjit::script
