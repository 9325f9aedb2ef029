// The kernel cache: memory tier → LMDB store → compile, with a readable mirror of the store.
#pragma once

#include <kjit/arch.hpp>
#include <kjit/binary.hpp>
#include <kjit/config.hpp>
#include <kjit/program.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

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
  std::uint64_t header_stats = 0;   // stat() calls on tracked disk headers (manifest checks)
  std::uint64_t header_rehashes = 0; // tracked headers hashed again because their stamp changed
  double compile_ms_saved = 0;     // compile time the hits did not spend again
  double compile_ms_spent = 0;     // compile time the misses spent
};

// A header found on disk (through the includer's folder or a -I folder) that is part of a key.
struct IncludedHeader {
  std::string name;    // as written in the #include
  std::string path;    // where it was found
  std::string sha256;  // of its content, 64 hex digits
};

// Why a program is not in the cache: the closest earlier entry with the same program name and
// the key fields that differ from it.
struct MissExplanation {
  bool hit = false;                      // the program is cached as it is (nothing to explain)
  std::string key;                       // the program's key now
  std::string closest_key;               // empty if no entry of that program name exists
  std::vector<std::string> differences;  // e.g. "include params.h (/src/params.h) changed"
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
  // The disk headers the program includes (toolkit headers are covered by the toolchain part).
  const std::vector<IncludedHeader>& included_headers() const noexcept { return m_includes; }

private:
  friend class Cache;
  Program m_program;
  Arch m_arch;
  std::vector<IncludedHeader> m_includes;
  unsigned char m_direct[32] = {};  // key without the disk headers: names the manifest
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

  // Computes the key once: hashes the source and in-memory headers, and finds the disk headers
  // it includes through a manifest (a stat() per header) or, the first time and after a change,
  // by resolving its includes. Resolves `auto`. Throws CompileError for a missing include.
  PreparedProgram prepare(const Program& program, const Arch& arch = Arch{});

  // Compares the program's key with the entries of the same program name (see MissExplanation).
  MissExplanation explain(const Program& program, const Arch& arch = Arch{});

  // Keys of entries made by another toolchain (NVRTC/nvJitLink version or build): never returned,
  // kept until removed.
  std::vector<std::string> orphans();
  // Deletes the orphans from the store and the mirror; returns how many.
  std::size_t remove_orphans();

  // The SM numbers NVRTC can build for, remembered with the toolchain fingerprint (no NVRTC load
  // on warm starts).
  std::vector<int> supported_archs();

  CacheStats stats() const;
  // Empties both tiers, the manifests and the mirror (the toolchain identities are kept).
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
  std::shared_ptr<const Binary> get_once(const PreparedProgram& prepared);
  std::unique_ptr<Impl> m_impl;
};

// The process-wide cache built from current_config(), shared: it is replaced by a new one after a
// kjit::option call or a fork(), and the one a caller holds lives until the caller lets it go.
// Thread-safe. Throws like Cache's constructor.
std::shared_ptr<Cache> shared_default_cache();

// *shared_default_cache(). The reference is valid only until the next kjit::option call (or
// fork()) in any thread replaces the cache: hold shared_default_cache() instead when options may
// change meanwhile.
Cache& default_cache();

// shared_default_cache()->get(program, arch): the cache is held for the whole call, so options
// changed meanwhile by other threads never destroy it under this call.
std::shared_ptr<const Binary> get(const Program& program, const Arch& arch = Arch{});

// Empties the default cache's memory tier, its store and its mirror.
void clear_cache();

} // namespace kjit
