// The mirror: a readable copy of each entry under <cache>/programs/<hash>/, never read for lookups.
#pragma once

#include "store/entry.hpp"
#include "util/test_hook.hpp"
#include "util/unique_handle.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <sys/stat.h>
#include <system_error>
#include <utility>
#include <vector>

namespace kjit::mirror {

// Writes the entry's folder (layout in docs/cache-format.md; `entry.headers` must hold the contents;
// each header is a hard link to programs/headers/<sha256>, written there once): every file goes into a short-named
// temp folder `programs/.tmp-<12 hex>-<pid>-<n>`, which is then renamed into place (exchanged with
// whatever was there, which is removed), so a reader sees a whole entry or none and a failure leaves
// no half-written entry. Never follows a symlink: folders are opened with O_NOFOLLOW below
// `cache_dir`, and header names are mapped by header_paths(). `replaced` (if given) is set when a
// folder of that key was there already. Returns the first error; never throws.
// A header of a program about to compile (Writer::write_headers): its name as the entry will hold
// it (store::Entry::headers), the hex SHA-256 of its content, and the content.
struct EarlyHeader {
  std::string name;
  std::string hex;
  std::string content;
};

// An entry folder's header links made before the entry is stored (while it compiles): a temp
// folder programs/.tmp-staged-heade-<pid>-<n> holding module/headers/… linked to the shared
// headers. write_entry() finishes a folder staged with exactly the entry's headers (its caller
// matches `hashes` with header_hashes()); one it can't open (removed meanwhile) it makes anew.
struct StagedHeaders {
  std::string temp;                           // the temp folder's name below programs/
  std::map<std::string, std::string> hashes;  // header name (as store::Entry::headers) → hex SHA-256
};
std::error_code write_entry(const std::string& cache_dir, const std::string& hex_key, const store::Entry& entry,
                            bool* replaced = nullptr, const StagedHeaders* staged = nullptr);

// Stages the header links of an entry about to be stored: programs/headers/<sha256> written for
// each content not there yet (named by the hex of its content's SHA-256, as the resolver hashed
// it; one no entry comes to use goes with the next sweep_headers()), then linked, then its content
// let go. nullopt when it could not (the entry's write_entry() links them itself). Never throws
// but bad_alloc.
std::optional<StagedHeaders> stage_headers(const std::string& cache_dir, std::vector<EarlyHeader> headers);
// The hex SHA-256 of each header of `entry` (the resolver's hashes where it has them), by name.
std::map<std::string, std::string> header_hashes(const store::Entry& entry);
// Tests: how many entry folders of this process were finished from a staged folder.
KJIT_TEST_HOOK std::uint64_t staged_folders_finished() noexcept;
// Removes a staged folder no entry came to use. Never throws.
void remove_staged(const std::string& cache_dir, const StagedHeaders& staged);


// Removes programs/<hex_key> (never following a symlink). Never throws.
void remove_entry(const std::string& cache_dir, const std::string& hex_key);

// The equivalent nvcc command lines for an entry, as module/compile.sh holds them.
std::string compile_script(const store::Entry& entry);

// A header name turned into a relative path that stays inside headers/: "", ".", ".." and
// absolute prefixes are dropped or replaced; a component longer than 200 bytes becomes its first
// 64 bytes, "~" and 16 hex digits of its SHA-256.
std::string safe_relative_path(const std::string& name);

// Header name → path below headers/: safe_relative_path(), then "~" appended while the path is a
// folder of another header ("cfg" beside "cfg/detail.h" becomes "cfg~") or already taken.
std::map<std::string, std::string> header_paths(const std::map<std::string, std::string>& headers);

// A temp folder or file older than this was left by a killed run (a writer finishes in far less).
constexpr std::int64_t k_stale_temp_seconds = 600;

// Removes from programs/ the temp folders and index temp files of killed runs (older than
// k_stale_temp_seconds) and, when `keep`
// is given, every name that is not in it (junk, entries no longer stored); the shared headers/
// folder and index.txt stay, unless they are something else (a file or a symlink named headers,
// a folder named index.txt: never followed). Returns how many.
std::size_t prune(const std::string& cache_dir, const std::set<std::string>* keep);

// Removes from programs/headers/ every file that no entry folder links (one link left) and whose
// name `keep` rejects (a header no stored entry uses any more), and the temp files of killed
// runs (dot files older than k_stale_temp_seconds). Returns how many.
std::size_t sweep_headers(const std::string& cache_dir, const std::function<bool(const std::string& hex)>& keep);

// One line of programs/index.txt.
struct IndexRow {
  std::string key;  // 64 hex
  std::string program_name;
  std::string arch;
  std::int64_t created_unix = 0;
  bool failed = false;  // a remembered compile error
};
// "<key>  <arch>  <YYYY-MM-DD HH:MM:SS> UTC  <program name>[  (compile error)]\n"
std::string index_line(const IndexRow& row);
// Appends one line (one O_APPEND write), unless the file lists the key already. That check reads
// the whole file, so it is made only where the line may be there (`may_be_listed`: the entry's
// folder was replaced) or when another process replaced the file meanwhile: a miss costs no
// read of an index of 100 000 lines. Returns the error; never throws.
std::error_code append_index(const std::string& cache_dir, const IndexRow& row, bool may_be_listed = true);
// Replaces programs/index.txt with these rows, sorted by program name, arch and key (atomic).
std::error_code write_index(const std::string& cache_dir, std::vector<IndexRow> rows);

// Removes `relative` (one name: a folder tree or a file) below `cache_dir` without following
// symlinks; this user's folders without permissions are given them back to be emptied.
void remove_tree(const std::string& cache_dir, const std::string& relative);

// --- Shared with the scripts/ mirror (script_mirror.cpp). ---
// Opens (creating, mode 0700) each component of `relative` below `base` without following symlinks.
std::optional<util::UniqueFd> open_path(int base, const std::string& relative, std::error_code& error);
// Writes a new file in a folder only this process writes (a temp folder): no temp name, no rename.
std::error_code write_new_file(int dir, const std::string& name, std::string_view content, int mode);
// Removes `name` below `dir` (a folder tree or a file) without following symlinks.
void remove_below(int dir, const std::string& name);
// Lists `folder` below `parent` (not through a symlink; "." and ".." left out), then calls `remove`
// for each name `pick` chose from its lstat. Returns how many were picked; 0 if it can't be listed.
std::size_t remove_picked(int parent, const std::string& folder,
                          const std::function<bool(int dir, const std::string& name, const struct stat& st)>& pick,
                          const std::function<void(int dir, const std::string& name)>& remove);
// ".tmp-<12 hex of key>-<pid>-<n>": a temp folder name prune() recognizes.
std::string temp_folder_name(const std::string& hex_key);

} // namespace kjit::mirror
