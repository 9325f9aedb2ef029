// A fingerprint of the toolkit's include trees, kept in the store and checked with folder stats.
#pragma once

#include "store/store.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kjit::deps {

// sha256 (hex) over every file of the include trees `dirs` (relative path and content, symbolic
// links followed): where the trees are and their dates never change it. The
// store's meta table keeps it with the stamp of every folder of the trees: while no folder
// changed (a stat each), the kept value is used; otherwise the trees are walked again (one stat
// per file) and the new value kept. `store` may be null (then it is computed once per process).
// Catches added, removed, renamed and replaced files (package upgrades); an in-place edit of a
// file keeps its folder's stamp and is only seen when something else in the trees changes.
std::string toolkit_headers_fingerprint(const std::vector<std::string>& dirs, store::Store* store);

// Every header name the trees `dirs` include or probe (#include, __has_include and its wrappers,
// as written; computed ones left out), found by the same walk and kept with the fingerprint: the
// last toolkit_headers_fingerprint() of `dirs` in this process, else one walk. Thread-safe.
std::shared_ptr<const std::vector<std::string>> toolkit_include_names(const std::vector<std::string>& dirs);

// How many times this process has checked the trees' folder stamps (once per
// toolkit_headers_fingerprint() that found a kept value): tests count them.
std::uint64_t toolkit_stamp_checks();

} // namespace kjit::deps
