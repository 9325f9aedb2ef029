// Lookup counts of every process that used a cache folder, summed for `kjit stats`: each process
// appends one line to <cache>/usage.log when its Cache goes away (no write per lookup).
#pragma once

#include <kjit/cache.hpp>

#include <cstdint>
#include <string>
#include <system_error>

namespace kjit::cache {

using kjit::UsageTotals;  // one line of the log per Cache; summed by read_usage()

// Appends one line with `stats` if they count any lookup (a single O_APPEND write under a shared
// flock; past 64 KiB the log is first summed into one line under an exclusive flock). Never throws;
// a failure loses these counts only. `shared` (KJIT_SHARED_CACHE): the log is the group's too, so
// every member adds its line.
void append_usage(const std::string& cache_dir, const CacheStats& stats, bool shared) noexcept;

// The sum of the log's lines (zeros without a log). Unreadable lines are skipped. Never throws.
UsageTotals read_usage(const std::string& cache_dir) noexcept;

// One line of the log: "kjit-usage 2", the counts of `totals` in the order of UsageTotals, then
// the saved and spent compile times with three decimals ("%.3f"), and a newline.
std::string usage_line(const UsageTotals& totals);

// Empties the log.
std::error_code zero_usage(const std::string& cache_dir);

} // namespace kjit::cache
