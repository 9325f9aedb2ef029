// The interface of a lower cache tier (bundles, the remote store): asked by key after the
// memory tier and the local store missed. The Cache walks the tiers in order and promotes a hit.
#pragma once

#include "util/hash.hpp"

#include <string>

namespace kjit::tier {

// What a tier answers for one key.
struct TierAnswer {
  enum class Kind { none, record, failure };
  Kind kind = Kind::none;
  std::string bytes;  // Kind::record: the record, exactly as the store would hold it (not yet verified)
  std::string why;    // Kind::failure: why the tier could not answer (unreadable, damaged)
};

class Tier {
public:
  virtual ~Tier() = default;
  // Names the tier in log lines, e.g. "bundle /opt/app/kernels.kjitpack".
  virtual const std::string& name() const noexcept = 0;
  // The record stored under `key`. Never throws: a tier that can't be read answers a failure,
  // which the cache counts and logs as a miss. Thread-safe.
  virtual TierAnswer get(const util::Sha256& key) noexcept = 0;
};

} // namespace kjit::tier
