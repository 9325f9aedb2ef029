#include "stored.hpp"

#include <kjit/uncached.hpp>

#include <algorithm>
#include <utility>

namespace kjit::cli {

std::uint64_t not_stored(const Cache& cache, const CacheStats& before, const CacheStats& after,
                         std::uint64_t compiled, std::string& why)
{
  why.clear();
  if (compiled == 0 || cache.config().disable_cache) {
    return 0;
  }
  const std::string problem = cache.store_problem();
  if (!cache.has_disk_tier() || !cache.writable()) {
    why = problem.empty() ? "the cache has no writable store" : problem;
    return compiled;
  }
  std::uint64_t count = 0;
  if (after.store_errors > before.store_errors) {
    count += after.store_errors - before.store_errors;
    why = problem.empty() ? "a commit to the store failed" : problem;
  }
  const std::pair<UncachedReason, std::uint64_t CacheStats::*> refusals[] = {
    {UncachedReason::formed_name, &CacheStats::uncached_formed_name},
    {UncachedReason::disk_name, &CacheStats::uncached_disk_name},
    {UncachedReason::time, &CacheStats::uncached_time},
    {UncachedReason::file_option, &CacheStats::uncached_file_option},
    {UncachedReason::probe, &CacheStats::uncached_probe},
    {UncachedReason::names_file, &CacheStats::uncached_names_file},
    {UncachedReason::environment, &CacheStats::uncached_environment},
  };
  for (const auto& [reason, counter] : refusals) {
    if (after.*counter > before.*counter) {
      count += after.*counter - before.*counter;
      if (why.empty()) {
        why = std::string("not cached: ") + to_string(reason) + " (the warning above names the program and why)";
      }
    }
  }
  return std::min(count, compiled);
}

} // namespace kjit::cli
