// Whether the compiles of a command were kept on disk, and if not, why: compile and warm say so
// rather than report a success that stored nothing (issue 39).
#pragma once

#include <kjit/cache.hpp>

#include <optional>
#include <string>

namespace kjit::cli {

// The key of the entry that `program` on `arch`, just compiled through `cache` into `binary`, now
// is in its store: the lookup's key (`looked_up`, a compile's stored entry) when the store has it,
// else the key prepare() gives (the one its compile established), else the entry of
// its name and arch that holds this very binary (no manifest leads to it: a header or folder was
// too new when it was resolved, and prepare() makes a provisional key). nullopt without a store
// or when none; "" with Config::disable_cache, which asks for nothing to be stored.
std::optional<std::string> stored_key(Cache& cache, const Program& program, const Arch& arch, const Binary& binary,
                                      const std::string& looked_up = {});

// One line saying why compiles between two stats() of `cache` were not stored: the store's
// problem (none, read-only, a failed commit), else a refusal to cache and its reason.
std::string why_not_stored(const Cache& cache, const CacheStats& before, const CacheStats& after);

} // namespace kjit::cli
