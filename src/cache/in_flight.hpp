// The lookups under way in one Cache, by key: a thread that asks for a key another thread is
// already looking up (or compiling) waits for that result instead of making its own.
#pragma once

#include "cache/memory_tier.hpp"
#include "util/hash.hpp"

#include <future>
#include <map>
#include <mutex>

namespace kjit::cache {

class InFlight {
public:
  // The result of the lookup of `key` that another thread is making, to wait for; or, when there
  // is none, an invalid future, and the caller's lookup is registered: its result goes to
  // `promise`, and end() must follow.
  std::shared_future<Result> join(const util::Sha256& key, std::promise<Result>& promise);
  // The caller's lookup of `key` is over (its promise set): later ones start their own.
  void end(const util::Sha256& key);

private:
  std::mutex m_mutex;
  std::map<util::Sha256, std::shared_future<Result>> m_lookups;
};

} // namespace kjit::cache
