// Whether the compiles of a command were kept on disk, and if not, why: compile and warm say so
// rather than report a success that stored nothing (issue 39).
#pragma once

#include <kjit/cache.hpp>

#include <string>

namespace kjit::cli {

// Whether `program` on `arch`, just compiled through `cache`, is now an entry of its store (the
// key prepare() gives: the one its compile established). False without a store; true with
// Config::disable_cache, which asks for nothing to be stored.
bool stored(Cache& cache, const Program& program, const Arch& arch);

// One line saying why compiles between two stats() of `cache` were not stored: the store's
// problem (none, read-only, a failed commit), else a refusal to cache and its reason.
std::string why_not_stored(const Cache& cache, const CacheStats& before, const CacheStats& after);

} // namespace kjit::cli
