// LRU bookkeeping for the memory tier.
#include "cache/memory_tier.hpp"

#include <cstring>

namespace kjit::cache {

std::size_t Result::bytes() const
{
  std::size_t total = sizeof(Result);
  if (binary) {
    total += sizeof(Binary) + binary->ptx.size() + binary->cubin.size() + binary->log.size();
    for (const auto& [expression, lowered] : binary->lowered_names) {
      total += expression.size() + lowered.size();
    }
  }
  if (failure) {
    total += sizeof(CompileError) + failure->log().size();
  }
  return total;
}

std::optional<Result> MemoryTier::find(const util::Sha256& key)
{
  std::lock_guard lock(m_mutex);
  const auto it = m_index.find(key);
  if (it == m_index.end()) {
    return std::nullopt;
  }
  m_lru.splice(m_lru.begin(), m_lru, it->second);
  return it->second->result;
}

std::optional<Result> MemoryTier::find_hit(const util::Sha256& key, bool note_use)
{
  std::lock_guard lock(m_mutex);
  const auto it = m_index.find(key);
  if (it == m_index.end()) {
    return std::nullopt;
  }
  m_lru.splice(m_lru.begin(), m_lru, it->second);
  count_hit_locked(key, it->second->result, note_use);
  return it->second->result;
}

void MemoryTier::count_hit(const util::Sha256& key, const Result& result, bool note_use)
{
  std::lock_guard lock(m_mutex);
  count_hit_locked(key, result, note_use);
}

void MemoryTier::count_hit_locked(const util::Sha256& key, const Result& result, bool note_use)
{
  m_hits.hits += 1;
  m_hits.failed += result.failure ? 1 : 0;
  m_hits.ms_saved += result.binary ? result.binary->timings.total_ms : 0.0;
  if (note_use) {
    m_used.insert(key);
  }
}

MemoryTier::Hits MemoryTier::hits() const
{
  std::lock_guard lock(m_mutex);
  return m_hits;
}

void MemoryTier::reset_hits()
{
  std::lock_guard lock(m_mutex);
  m_hits = Hits{};
}

void MemoryTier::take_used(std::unordered_set<util::Sha256, util::DigestHash>& into)
{
  std::lock_guard lock(m_mutex);
  into.insert(m_used.begin(), m_used.end());
  m_used.clear();
}

void MemoryTier::insert(const util::Sha256& key, Result result)
{
  const std::size_t bytes = result.bytes();
  std::lock_guard lock(m_mutex);
  insert_locked(key, std::move(result), bytes);
}

bool MemoryTier::admit(const util::Sha256& key, Result result)
{
  const std::size_t bytes = result.bytes();
  std::lock_guard lock(m_mutex);
  if (bytes > m_limit || !seen_before(key)) {
    return false;  // (a tier of limit 0 makes no doorkeeper)
  }
  insert_locked(key, std::move(result), bytes);
  return true;
}

bool MemoryTier::seen_before(const util::Sha256& key)
{
  if (m_doorkeeper.empty() || m_marks == k_doorkeeper_marks) {
    m_doorkeeper.assign(k_doorkeeper_bits / 64, 0);
    m_marks = 0;
  }
  // Two bit positions from bytes 8..15 of the key (SHA-256: uniform; DigestHash uses bytes 0..7).
  std::uint32_t halves[2];
  std::memcpy(halves, key.data() + 8, sizeof halves);
  bool seen = true;
  for (const std::uint32_t half : halves) {
    const std::size_t bit = half % k_doorkeeper_bits;
    std::uint64_t& word = m_doorkeeper[bit / 64];
    const std::uint64_t mask = std::uint64_t(1) << (bit % 64);
    seen = seen && (word & mask) != 0;
    word |= mask;
  }
  m_marks += seen ? 0 : 1;
  return seen;
}

void MemoryTier::insert_locked(const util::Sha256& key, Result result, std::size_t bytes)
{
  drop(key);
  if (bytes > m_limit) {
    return;
  }
  m_lru.push_front(Node{key, std::move(result), bytes});
  m_index.emplace(key, m_lru.begin());
  m_bytes += bytes;
  while (m_bytes > m_limit) {
    const Node& oldest = m_lru.back();
    m_bytes -= oldest.bytes;
    m_index.erase(oldest.key);
    m_lru.pop_back();
  }
}

void MemoryTier::erase(const std::vector<util::Sha256>& keys)
{
  std::lock_guard lock(m_mutex);
  for (const util::Sha256& key : keys) {
    drop(key);
  }
}

void MemoryTier::drop(const util::Sha256& key)
{
  if (const auto it = m_index.find(key); it != m_index.end()) {
    m_bytes -= it->second->bytes;
    m_lru.erase(it->second);
    m_index.erase(it);
  }
}

void MemoryTier::clear()
{
  std::lock_guard lock(m_mutex);
  m_lru.clear();
  m_index.clear();
  m_bytes = 0;
  m_doorkeeper.clear();
  m_marks = 0;
}

std::size_t MemoryTier::bytes() const
{
  std::lock_guard lock(m_mutex);
  return m_bytes;
}

std::size_t MemoryTier::size() const
{
  std::lock_guard lock(m_mutex);
  return m_index.size();
}

} // namespace kjit::cache
