// The mirror: a readable copy of each entry under <cache>/programs/<hash>/, never read for lookups.
#pragma once

#include "store/entry.hpp"

#include <string>
#include <system_error>

namespace kjit::mirror {

// Writes the entry's folder (layout in docs/cache-format.md) with atomic file writes. Never
// follows a symlink: every folder is opened with O_NOFOLLOW below `cache_dir`, and header names
// are reduced to safe relative paths. Returns the first error; never throws.
std::error_code write_entry(const std::string& cache_dir, const std::string& hex_key, const store::Entry& entry);

// The equivalent nvcc command lines for an entry, as module/compile.sh holds them.
std::string compile_script(const store::Entry& entry);

// A header name turned into a relative path that stays inside headers/: "", ".", ".." and
// absolute prefixes are dropped or replaced.
std::string safe_relative_path(const std::string& name);

} // namespace kjit::mirror
