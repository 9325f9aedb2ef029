#include "cache/statistics.hpp"

namespace kjit::cache {

void Statistics::count(std::uint64_t CacheStats::*counter, double CacheStats::*ms, double value, std::uint64_t by)
{
  std::lock_guard lock(m_mutex);
  m_stats.*counter += by;
  if (ms != nullptr) {
    m_stats.*ms += value;
  }
}

std::string Statistics::store_problem() const
{
  std::lock_guard lock(m_mutex);
  return m_store_problem;
}

void Statistics::set_store_problem(std::string why)
{
  std::lock_guard lock(m_mutex);
  m_store_problem = std::move(why);
}

} // namespace kjit::cache
