// Lookup counts of every process that used a cache folder, summed for `kjit stats`: each process
// appends one line to <cache>/usage.log when its Cache goes away (no write per lookup).
#pragma once

#include <kjit/cache.hpp>

#include <cstdint>
#include <string>
#include <system_error>

namespace kjit::cache {

struct UsageTotals {
  std::uint64_t processes = 0;  // lines summed (one per Cache that looked something up)
  std::uint64_t memory_hits = 0;
  std::uint64_t disk_hits = 0;
  std::uint64_t bundle_hits = 0;
  std::uint64_t misses = 0;
  std::uint64_t compiles = 0;
  double compile_ms_saved = 0;
  double compile_ms_spent = 0;
};

// Appends one line with `stats` if they count any lookup (a single O_APPEND write under a shared
// flock; past 64 KiB the log is first summed into one line under an exclusive flock). Never throws;
// a failure loses these counts only.
void append_usage(const std::string& cache_dir, const CacheStats& stats) noexcept;

// The sum of the log's lines (zeros without a log). Unreadable lines are skipped. Never throws.
UsageTotals read_usage(const std::string& cache_dir) noexcept;

// Empties the log.
std::error_code zero_usage(const std::string& cache_dir);

} // namespace kjit::cache
