#include "cache/reported.hpp"

namespace kjit::cache {

bool Reported::first(const util::Sha256& key)
{
  std::lock_guard lock(m_mutex);
  return m_keys.insert(key).second;
}

bool Reported::first(const std::string& what)
{
  std::lock_guard lock(m_mutex);
  return m_problems.insert(what).second;
}

bool Reported::seen(const std::string& what)
{
  std::lock_guard lock(m_mutex);
  return m_problems.count(what) != 0;
}

} // namespace kjit::cache
