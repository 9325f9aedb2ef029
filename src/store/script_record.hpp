// The stored forms of a script (its schedules) and of its dispatch table: checksummed records kept
// in the store's meta table under "script/<hash>" and "script-table/<hash>" (docs/scripts.md).
// In the store's layer (the scripts of src/script/ write them) so that the bundles of src/cache/,
// which carry them, can check them.
#pragma once

#include "store/meta_keys.hpp"

#include <kjit/script.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kjit::script {

// Bumped whenever the encoding changes: an older record then reads as missing (rebuilt, tuned
// again). Tables are at 2 since their rows name the programs they were chosen among.
constexpr std::uint32_t k_record_version = 1;
constexpr std::uint32_t k_table_version = 2;

// What `script/<hash>` holds: the script as built and each schedule's outcome.
struct ScriptRecord {
  std::string name;
  std::string hash;  // 64 hex digits
  std::string arch;
  std::string name_expression;
  std::string script_txt;  // the hashed text (script_text())
  std::vector<TuningParameter> space;
  std::vector<std::string> size_names;
  std::vector<ScheduleInfo> schedules;
  std::int64_t created_unix = 0;
};

// One stored row: the entry and the programs it was chosen among: the SHA-256 (hex) of each built
// schedule's index and program then (programs_digest()); empty for a given row. A row is served
// only where the schedules build those programs: the script hash leaves out the headers found on
// the include path and the toolkit, which the program keys cover.
struct TableRow : DispatchEntry {
  std::string programs;
};

// What `script-table/<hash>` holds.
struct TableRecord {
  Fingerprint fingerprint;
  std::vector<TableRow> entries;  // sorted by key

  std::vector<DispatchEntry> rows() const { return {entries.begin(), entries.end()}; }
};

// The TableRow::programs of a row chosen among `programs`: each built schedule's index and program
// (the SHA-256 of its key's texts less the working directory that a -lineinfo or -G key names, on
// which a row does not depend: build.cpp).
std::string programs_digest(const std::vector<std::pair<std::size_t, std::string>>& programs);

// Meta-table keys of a script's two records.
std::string script_row(const std::string& hash);
std::string table_row(const std::string& hash);
using store::k_script_prefix;  // (store/meta_keys.hpp: the meta table's namespaces)

// Encoded as: magic "KJITSCRP" or "KJITTABL", u32 version, 16-byte XXH3-128 of the body, body
// (length-prefixed fields). decode_* return nullopt for anything that does not check out.
std::string encode(const ScriptRecord& record);
std::string encode(const TableRecord& record);
std::optional<ScriptRecord> decode_script(std::string_view bytes);
std::optional<TableRecord> decode_table(std::string_view bytes);

// Why the meta row `key` → `value` (a "script/…" or "script-table/…" row) would not be read as a
// script or table: it does not decode, or its key's hash is not 64 hex digits or not the record's
// own. Empty when it would.
std::string script_row_problem(std::string_view key, std::string_view value);

} // namespace kjit::script
