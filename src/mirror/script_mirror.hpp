// The readable scripts/<folder>/<hash>/ tree: schedule links into programs/, schedule.txt,
// dispatch_table.txt, fingerprint.txt, failed/building/<i>.txt and latency/<key>/ (docs/scripts.md).
#pragma once

#include "store/script_record.hpp"
#include "store/store.hpp"

#include <optional>
#include <string>
#include <system_error>

namespace kjit::script {

// Writes the script's folder in a temp folder beside it, then renames it into place (exchanging
// whatever was there, which is removed): readers see a whole folder or the previous one. Never
// follows a symlink below `cache_dir`. Returns the first error; never throws.
std::error_code write_mirror(const std::string& cache_dir, const ScriptRecord& script,
                             const std::optional<TableRecord>& table);

// Deletes scripts/ and writes it again from the store's records; returns the scripts written.
// Never throws (a script that can't be written is counted in `failed`).
std::size_t rebuild_mirror(const store::Store& store, const std::string& cache_dir, std::size_t& failed);

// Deletes every script and table record from the store (one transaction) and scripts/ from the
// mirror, for Cache::clear. Throws StoreError when the store can't be written.
void forget_all(store::Store& store, const std::string& cache_dir);

// "n=1024-m=256": the folder of one tuning key under latency/.
std::string key_folder(const std::vector<std::string>& size_names, const std::vector<std::uint64_t>& key);

} // namespace kjit::script
