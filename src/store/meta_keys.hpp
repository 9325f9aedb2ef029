// The namespaces of the store's meta table that the layers above write, in one place: what a
// bundle carries is decided here, below the layers that write the rows.
#pragma once

#include <string_view>

namespace kjit::store {

// "toolchain <XXH3 of the libraries' identity>": NVRTC's and nvJitLink's versions (src/cache).
constexpr std::string_view k_toolchain_prefix = "toolchain ";
// "script/<hash>": a script's schedules; "script-table/<hash>": its dispatch table (src/script).
constexpr std::string_view k_script_prefix = "script/";
constexpr std::string_view k_script_table_prefix = "script-table/";

// "closure-library <sha256 hex>": where a closed resolution of a library's programs is
// (src/cache/closure_seed.cpp); this store's own, never in a bundle.
constexpr std::string_view k_closure_library_prefix = "closure-library ";
// "closure-seed <sha256 hex of a seed key>": where the closed resolution of a program (name, source,
// options, context, toolchain) is, for its other archs (src/cache/closure_seed.cpp); this store's
// own, never in a bundle.
constexpr std::string_view k_closure_seed_prefix = "closure-seed ";

// "source <arch number> <sha256 hex of a program's source>": an entry of a program with that source
// was stored here for an arch of that number (src/cache/speculation.cpp: a lookup of that source by another name, a project that moved,
// may be a hit, so it is not compiled ahead); this store's own, never in a bundle, never removed (a
// row whose entries are gone only keeps a lookup from being compiled ahead).
constexpr std::string_view k_source_prefix = "source ";
// The value a kjit that writes program rows (below) gives a source row; one written by an older kjit
// says "stored", and keeps that source from being compiled ahead under any name.
constexpr std::string_view k_source_with_program_rows = "program";

// "program <arch number> <sha256 hex of cache::program_digest()>": an entry of that program was
// stored here for an arch of that number (src/cache/speculation.cpp: a lookup of it, under any
// name, may be a hit; another program of the same name may not); this store's own, never in a
// bundle, never removed, as source rows.
constexpr std::string_view k_program_prefix = "program ";
// "unmarked-name <hex of names_prefix()>": entries of that program name were put here without their
// program rows (a bundle's import, whose records don't say what the key's program was): a lookup of
// that name is not compiled ahead while such an entry may serve it.
constexpr std::string_view k_unmarked_name_prefix = "unmarked-name ";
// "program-rows": the unix time of the first commit that wrote program rows here. An entry created
// before then may have none: its program name keeps lookups of that name from being compiled ahead.
constexpr std::string_view k_program_rows_since = "program-rows";

// "size-count": "<bytes> <unix time>", what KJIT_MAX_SIZE counts of the store and its mirror as a
// full count found it at that time, with what each write since added in its own commit
// (Store::Row::added); a process's first write takes it instead of walking the mirror and the
// store (src/cache/size_limit.cpp). This store's own, never in a bundle.
constexpr std::string_view k_size_count = "size-count";

// A script's row or its table's (what a bundle's import reports as scripts).
constexpr bool is_script_row(std::string_view key)
{
  return key.substr(0, k_script_prefix.size()) == k_script_prefix ||
         key.substr(0, k_script_table_prefix.size()) == k_script_table_prefix;
}

// Whether a meta row goes into bundles with the entries: the toolchains' identities (an empty
// store finds a key's toolchain part without loading NVRTC), scripts and their dispatch tables
// (a tuned kernel family ships as its kernels do). Each is checksummed on its own as well.
constexpr bool travels_in_bundles(std::string_view key)
{
  return key.substr(0, k_toolchain_prefix.size()) == k_toolchain_prefix || is_script_row(key);
}

} // namespace kjit::store
