// The in-process memory tier: bounded by bytes, least recently used out first, shared by all threads.
// Compiles go in at once; a disk hit only on its key's second disk hit (admit(), the doorkeeper).
#pragma once

#include <kjit/binary.hpp>
#include <kjit/error.hpp>

#include "util/hash.hpp"

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace kjit::cache {

// A cached result: a binary, or the CompileError of a program the compiler rejected.
struct Result {
  std::shared_ptr<const Binary> binary;
  std::shared_ptr<const CompileError> failure;
  // A compile's: the key its entry is committed under (the commit may still be under way), when
  // it was given to a writable store.
  std::optional<util::Sha256> stored_key;
  std::size_t bytes() const;
};

class MemoryTier {
public:
  explicit MemoryTier(std::size_t limit_bytes) : m_limit(limit_bytes) {}

  // The entry for `key`, now the most recently used, or nullopt.
  std::optional<Result> find(const util::Sha256& key);
  // find() for a lookup served by the tier: counts the hit (and, if `note_use`, the key's use for
  // the size limit) under the tier's own lock, so a memory hit takes no other lock.
  std::optional<Result> find_hit(const util::Sha256& key, bool note_use);
  // Counts a hit served with `result`, found by find() (the direct index's way), as find_hit() does.
  void count_hit(const util::Sha256& key, const Result& result, bool note_use);
  // The hits find_hit() counted since the last reset_hits().
  struct Hits {
    std::uint64_t hits = 0;
    std::uint64_t failed = 0;  // hits that were a remembered compile error
    double ms_saved = 0;       // the compile time of the binaries served
  };
  Hits hits() const;
  void reset_hits();
  // Moves the keys find_hit() noted since the last call into `into`.
  void take_used(std::unordered_set<util::Sha256, util::DigestHash>& into);
  // Inserts or replaces, then evicts least recently used entries beyond the limit. An entry
  // bigger than the whole limit is not kept.
  void insert(const util::Sha256& key, Result result);
  // A disk hit: inserted (and true returned) only if `key` was offered before, else only marked
  // in the doorkeeper. A program looked up once in a bulk warm start keeps no copy (≈ 5 KiB of
  // heap and its page faults each); one looked up again is kept from its second disk hit on.
  bool admit(const util::Sha256& key, Result result);
  // Drops the entries of `keys` (those not held are ignored).
  void erase(const std::vector<util::Sha256>& keys);
  void clear();
  std::size_t bytes() const;
  std::size_t size() const;

private:
  struct Node {
    util::Sha256 key;
    Result result;
    std::size_t bytes;
  };

  // Removes the entry of `key` if held. Caller holds m_mutex.
  void drop(const util::Sha256& key);
  // insert() with m_mutex held.
  void insert_locked(const util::Sha256& key, Result result, std::size_t bytes);
  // count_hit() with m_mutex held.
  void count_hit_locked(const util::Sha256& key, const Result& result, bool note_use);

  // TinyLFU's doorkeeper: a Bloom filter of the keys offered once (k_doorkeeper_bits bits, two
  // bits per key taken from the key's own bytes, cleared after k_doorkeeper_marks marks so its
  // false positives stay below ≈ 1.5 %). A false positive only admits a key early; a key marked
  // just before a clear is admitted on its third disk hit. No per-key allocation: its 32 KiB are
  // made on the first admit().
  static constexpr std::size_t k_doorkeeper_bits = std::size_t(1) << 18;
  static constexpr std::size_t k_doorkeeper_marks = std::size_t(1) << 14;
  // Whether `key` was marked before; marks it. Caller holds m_mutex.
  bool seen_before(const util::Sha256& key);
  std::vector<std::uint64_t> m_doorkeeper;
  std::size_t m_marks = 0;

  mutable std::mutex m_mutex;
  Hits m_hits;
  std::unordered_set<util::Sha256, util::DigestHash> m_used;
  std::size_t m_limit;
  std::size_t m_bytes = 0;
  std::list<Node> m_lru;  // front = most recent
  std::unordered_map<util::Sha256, std::list<Node>::iterator, util::DigestHash> m_index;
};

} // namespace kjit::cache
