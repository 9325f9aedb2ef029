// Problems logged once each, whichever thread meets them.
#pragma once

#include "util/hash.hpp"

#include <mutex>
#include <set>
#include <string>

namespace kjit::cache {

// Problems logged once each (a damaged entry by key, a tier's problem by what it was), whichever
// thread meets them. Thread-safe.
class Reported {
public:
  // Whether `what` is new (then it is remembered): the caller logs it.
  bool first(const util::Sha256& key);
  bool first(const std::string& what);
  bool seen(const std::string& what);

private:
  std::mutex m_mutex;
  std::set<util::Sha256> m_keys;
  std::set<std::string> m_problems;
};

} // namespace kjit::cache
