// The interface of a lower cache tier (bundles, the remote store): asked by key after the
// memory tier and the local store missed, and offered what this process compiled. The cache's
// walk over the tiers (src/cache/tiers.cpp) holds the policy: which tier is asked first, that a
// hit is verified and copied into the local store (backfill), that a compile is offered to every
// tier (upload). A tier only keeps and finds records.
//
// No tier removes records: bundles are read-only files, and the remote tier's records belong to
// the fleet (a node's prune or clear of its own store leaves them; Redis evicts by its own policy).
#pragma once

#include <kjit/cache.hpp>

#include "util/hash.hpp"

#include <cstdint>
#include <string>

namespace kjit::tier {

// What a tier answers for one key.
struct TierAnswer {
  enum class Kind { none, record, failure };
  Kind kind = Kind::none;
  std::string bytes;  // Kind::record: the record, exactly as the store would hold it (not yet verified)
  std::string why;    // Kind::failure: why the tier could not answer (unreadable, damaged)
  bool warned = false;  // Kind::failure: the tier has said so itself (once per outage); the cache only counts it
};

// How a tier's answers are told apart from another's in a lookup's outcome and the statistics.
// A null counter is not counted apart (a bundle's misses are the lookup's misses).
struct TierAccounting {
  Source source;                                           // a hit's kjit::Source ("bundle", "remote")
  std::uint64_t CacheStats::*hits;                         // verified records served
  std::uint64_t CacheStats::*misses = nullptr;             // answered none
  std::uint64_t CacheStats::*errors = nullptr;             // could not answer, or a damaged record
  std::uint64_t CacheStats::*bytes_read = nullptr;         // record bytes received
};

class Tier {
public:
  virtual ~Tier() = default;
  // Names the tier in log lines, e.g. "bundle /opt/app/kernels.kjitpack".
  virtual const std::string& name() const noexcept = 0;
  virtual const TierAccounting& accounting() const noexcept = 0;
  // The record stored under `key`. Never throws: a tier that can't be read answers a failure,
  // which the cache counts and logs as a miss. Thread-safe.
  virtual TierAnswer get(const util::Sha256& key) noexcept = 0;
  // Whether put() may keep anything (false: a read-only tier, which is offered nothing).
  virtual bool keeps_puts() const noexcept = 0;
  // Offers `record` (self-contained: its headers inline, as another machine's store lacks this
  // one's blobs), compiled by this process, under `key`. A tier may keep it later (off the
  // caller's path), drop it (read-only, too large, unreachable) or, as a bundle does, ignore it.
  // Never throws, never waits on a network. Thread-safe.
  virtual void put(const util::Sha256& key, std::string record) noexcept = 0;
};

} // namespace kjit::tier
