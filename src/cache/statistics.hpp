// One Cache's counters (kjit::CacheStats, less the memory tier's own hit counts, which it keeps
// lock-free) and why its entries are not kept on disk. Thread-safe.
#pragma once

#include <kjit/cache.hpp>

#include <cstdint>
#include <mutex>
#include <string>

namespace kjit::cache {

class Statistics {
public:
  // Adds `by` to `counter` and, when `ms` is given, `value` to it.
  void count(std::uint64_t CacheStats::*counter, double CacheStats::*ms = nullptr, double value = 0,
             std::uint64_t by = 1);
  // Changes several counters at once: readers never see one without the others.
  template <class Change>
  void update(Change&& change)
  {
    std::lock_guard lock(m_mutex);
    change(m_stats);
  }
  // A copy of the counters with `add` applied to it under the lock: counts kept elsewhere (the
  // memory tier's own hits) join them in step with reset().
  template <class Add>
  CacheStats snapshot(Add&& add) const
  {
    std::lock_guard lock(m_mutex);
    CacheStats now = m_stats;
    add(now);
    return now;
  }
  // Zeroes every counter and, under the same lock, calls `also` (which zeroes those kept
  // elsewhere: Cache::clear); the store problem stays.
  template <class Also>
  void reset(Also&& also)
  {
    std::lock_guard lock(m_mutex);
    m_stats = CacheStats{};
    also();
  }

  // Why entries are not kept on disk: no store (the reason it was refused or failed to open), or
  // the error of the last commit that failed (kept after later commits succeed). Empty: none.
  std::string store_problem() const;
  void set_store_problem(std::string why);

private:
  mutable std::mutex m_mutex;
  CacheStats m_stats;
  std::string m_store_problem;
};

} // namespace kjit::cache
