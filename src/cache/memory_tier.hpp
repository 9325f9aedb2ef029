// The in-process memory tier: bounded by bytes, least recently used out first, shared by all threads.
#pragma once

#include <kjit/binary.hpp>
#include <kjit/error.hpp>

#include "util/hash.hpp"

#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

namespace kjit::cache {

// A cached result: a binary, or the CompileError of a program the compiler rejected.
struct Result {
  std::shared_ptr<const Binary> binary;
  std::shared_ptr<const CompileError> failure;
  std::size_t bytes() const;
};

class MemoryTier {
public:
  explicit MemoryTier(std::size_t limit_bytes) : m_limit(limit_bytes) {}

  // The entry for `key`, now the most recently used, or nullopt.
  std::optional<Result> find(const util::Sha256& key);
  // Inserts or replaces, then evicts least recently used entries beyond the limit. An entry
  // bigger than the whole limit is not kept.
  void insert(const util::Sha256& key, Result result);
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

  mutable std::mutex m_mutex;
  std::size_t m_limit;
  std::size_t m_bytes = 0;
  std::list<Node> m_lru;  // front = most recent
  std::unordered_map<util::Sha256, std::list<Node>::iterator, util::DigestHash> m_index;
};

} // namespace kjit::cache
