#include "cache/in_flight.hpp"

namespace kjit::cache {

std::shared_future<Result> InFlight::join(const util::Sha256& key, std::promise<Result>& promise)
{
  std::lock_guard lock(m_mutex);
  if (const auto it = m_lookups.find(key); it != m_lookups.end()) {
    return it->second;
  }
  m_lookups.emplace(key, promise.get_future().share());
  return {};
}

void InFlight::end(const util::Sha256& key)
{
  std::lock_guard lock(m_mutex);
  m_lookups.erase(key);
}

} // namespace kjit::cache
