// The kernel cache: memory tier → LMDB store → compile, with a readable mirror of the store.
#pragma once

#include <kjit/arch.hpp>
#include <kjit/binary.hpp>
#include <kjit/config.hpp>
#include <kjit/program.hpp>

#include <cstdint>
#include <memory>
#include <string>

namespace kjit {

// Counters since the cache was created (or cleared). All lookups are counted exactly once.
struct CacheStats {
  std::uint64_t memory_hits = 0;   // answered from the memory tier
  std::uint64_t disk_hits = 0;     // answered from LMDB
  std::uint64_t misses = 0;        // found in neither tier
  std::uint64_t compiles = 0;      // NVRTC runs performed by this cache
  std::uint64_t failed_hits = 0;   // hits on a remembered CompileError (counted in the hits too)
  std::uint64_t quarantined = 0;   // damaged records moved aside
  std::uint64_t mirror_errors = 0; // mirror writes that failed (the store is unaffected)
  double compile_ms_saved = 0;     // compile time the hits did not spend again
  double compile_ms_spent = 0;     // compile time the misses spent
};

// A program with its key already computed, for repeated lookups at memory-tier speed.
// Valid for the Cache that prepared it. Copyable.
class PreparedProgram {
public:
  const Program& program() const noexcept { return m_program; }
  const Arch& arch() const noexcept { return m_arch; }
  // The entry's name: sha256(program.txt ‖ options.txt), 64 hex digits.
  std::string key() const;
  const std::string& program_txt() const noexcept { return m_program_txt; }
  const std::string& options_txt() const noexcept { return m_options_txt; }

private:
  friend class Cache;
  Program m_program;
  Arch m_arch;
  std::string m_program_txt;
  std::string m_options_txt;
  unsigned char m_digest[32] = {};
};

// Thread-safe; share one per process (see default_cache()). Not usable across fork(): a child
// process creates its own.
class Cache {
public:
  // Opens the cache folder described by `config` (creating it with mode 0700). Throws
  // StoreError if the folder is unsafe (owned by another user, or group/other-writable, unless
  // config.shared_cache) or the store can't be opened; ConfigError for bad settings.
  explicit Cache(const Config& config);
  Cache();  // current_config()
  ~Cache();
  Cache(const Cache&) = delete;
  Cache& operator=(const Cache&) = delete;

  // The binary for `program` on `arch` (auto: config.arch, then the current device): from memory,
  // else from LMDB, else compiled and stored. Throws what compile() throws; a program the
  // compiler rejected before throws the same CompileError again without compiling.
  std::shared_ptr<const Binary> get(const Program& program, const Arch& arch = Arch{});
  std::shared_ptr<const Binary> get(const PreparedProgram& prepared);

  // Computes the key once (hashing the source and headers). Resolves `auto`.
  PreparedProgram prepare(const Program& program, const Arch& arch = Arch{});

  CacheStats stats() const;
  // Empties both tiers and the mirror (the toolchain identities are kept).
  void clear();
  // Rewrites programs/ from LMDB; returns the number of entries written.
  std::size_t rebuild_mirror();
  // Entries in the disk tier (0 without one).
  std::size_t disk_entries() const;

  const Config& config() const noexcept;
  bool has_disk_tier() const noexcept;
  // False when the cache folder is read-only: misses are then kept in memory only.
  bool writable() const noexcept;
  // The LMDB folder (<cache_dir>/store, or a node-local folder when cache_dir is on a network
  // filesystem). Empty without a disk tier.
  std::string store_path() const;

  struct Impl;

private:
  std::unique_ptr<Impl> m_impl;
};

// The process-wide cache built from current_config(); rebuilt after a kjit::option call or a
// fork(). Throws like Cache's constructor.
Cache& default_cache();

// default_cache().get(program, arch).
std::shared_ptr<const Binary> get(const Program& program, const Arch& arch = Arch{});

// Empties the default cache's memory tier, its store and its mirror.
void clear_cache();

} // namespace kjit
