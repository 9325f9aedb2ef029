// Whether the compiles of a command were kept on disk, and if not, why: compile and warm say so
// rather than report a success that stored nothing (issue 39).
#pragma once

#include <kjit/cache.hpp>

#include <cstdint>
#include <string>

namespace kjit::cli {

// The compiles between two stats() of `cache` that were not stored: all of `compiled` when the
// cache has no writable store (with Config::disable_cache: none), else the failed commits and the
// compiles refused for caching. `why` is set to one line saying why (empty when none).
std::uint64_t not_stored(const Cache& cache, const CacheStats& before, const CacheStats& after,
                         std::uint64_t compiled, std::string& why);

} // namespace kjit::cli
