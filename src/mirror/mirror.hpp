// The mirror: a readable copy of each entry under <cache>/programs/<hash>/, never read for lookups.
#pragma once

#include "store/entry.hpp"
#include "util/unique_handle.hpp"

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <system_error>

namespace kjit::mirror {

// Writes the entry's folder (layout in docs/cache-format.md): every file goes into a short-named
// temp folder `programs/.tmp-<12 hex>-<pid>-<n>`, which is then renamed into place (exchanged with
// whatever was there, which is removed), so a reader sees a whole entry or none and a failure leaves
// no half-written entry. Never follows a symlink: folders are opened with O_NOFOLLOW below
// `cache_dir`, and header names are mapped by header_paths(). Returns the first error; never throws.
std::error_code write_entry(const std::string& cache_dir, const std::string& hex_key, const store::Entry& entry);

// The equivalent nvcc command lines for an entry, as module/compile.sh holds them.
std::string compile_script(const store::Entry& entry);

// A header name turned into a relative path that stays inside headers/: "", ".", ".." and
// absolute prefixes are dropped or replaced; a component longer than 200 bytes becomes its first
// 64 bytes, "~" and 16 hex digits of its SHA-256.
std::string safe_relative_path(const std::string& name);

// Header name → path below headers/: safe_relative_path(), then "~" appended while the path is a
// folder of another header ("cfg" beside "cfg/detail.h" becomes "cfg~") or already taken.
std::map<std::string, std::string> header_paths(const std::map<std::string, std::string>& headers);

// Removes from programs/ the temp folders of killed runs (older than 10 minutes) and, when `keep`
// is given, every name that is not in it (junk, entries no longer stored). Returns how many.
std::size_t prune(const std::string& cache_dir, const std::set<std::string>* keep);

// --- Shared with the scripts/ mirror (src/script/script_mirror.cpp). ---
// Opens (creating, mode 0700) each component of `relative` below `base` without following symlinks.
std::optional<util::UniqueFd> open_path(int base, const std::string& relative, std::error_code& error);
// Writes a new file in a folder only this process writes (a temp folder): no temp name, no rename.
std::error_code write_new_file(int dir, const std::string& name, std::string_view content, int mode);
// Removes `name` below `dir` (a folder tree or a file) without following symlinks.
void remove_below(int dir, const std::string& name);
// ".tmp-<12 hex of key>-<pid>-<n>": a temp folder name prune() recognizes.
std::string temp_folder_name(const std::string& hex_key);

} // namespace kjit::mirror
