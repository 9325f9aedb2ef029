// The kernel cache: memory tier → LMDB store → bundles → compile, with a readable mirror of the store.
#pragma once

#include <kjit/arch.hpp>
#include <kjit/binary.hpp>
#include <kjit/config.hpp>
#include <kjit/program.hpp>
#include <kjit/uncached.hpp>

#include <array>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace kjit {

// Counters since the cache was created (or cleared). All lookups are counted exactly once.
struct CacheStats {
  std::uint64_t memory_hits = 0;   // answered from the memory tier
  std::uint64_t disk_hits = 0;     // answered from LMDB
  std::uint64_t bundle_hits = 0;   // answered from a bundle (KJIT_BUNDLE), then promoted
  std::uint64_t tier_errors = 0;   // bundles that could not be read or held a damaged record (a miss)
  std::uint64_t remote_hits = 0;   // answered by the remote tier (KJIT_REMOTE_CACHE), then backfilled
  std::uint64_t remote_misses = 0; // asked the remote tier, which had no record
  std::uint64_t remote_errors = 0; // remote lookups that failed or were skipped (server down, circuit
                                   // open) or returned a damaged record (also in tier_errors): a miss
  std::uint64_t remote_bytes_read = 0;    // bytes of the records the remote tier answered
  std::uint64_t remote_bytes_written = 0; // bytes of the records the remote servers accepted (uploads)
  std::uint64_t misses = 0;        // found in no tier
  std::uint64_t compiles = 0;      // NVRTC runs performed by this cache
  std::uint64_t failed_hits = 0;   // hits on a remembered CompileError (counted in the hits too)
  std::uint64_t quarantined = 0;   // damaged records moved aside
  std::uint64_t mirror_errors = 0; // mirror writes that failed (the store is unaffected)
  std::uint64_t store_errors = 0;  // commits that failed (disk full…): the binary was served from memory
  std::uint64_t compiled_elsewhere = 0; // misses answered by the store once another process's
                                        // compile of the same key was done (counted in misses)
  std::uint64_t stores_replaced = 0; // times the store was found damaged, moved aside and replaced
  std::uint64_t header_stats = 0;   // stat() calls on tracked disk headers (manifest checks)
  std::uint64_t header_rehashes = 0; // tracked headers hashed again because their stamp changed
  // Compiles made from the files on disk and not cached (also in `compiles`), by UncachedReason.
  std::uint64_t uncached_formed_name = 0;
  std::uint64_t uncached_disk_name = 0;
  std::uint64_t uncached_time = 0;
  std::uint64_t uncached_file_option = 0;
  std::uint64_t uncached_probe = 0;
  std::uint64_t uncached_names_file = 0;
  std::uint64_t uncached_environment = 0;
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
  bool hit = false;                      // a lookup now would find it in the store (nothing to explain)
  std::string key;                       // the key that lookup finds, or a compile would store it under
  std::string closest_key;               // empty if no entry of that program name exists
  std::vector<std::string> differences;  // e.g. "include params.h (/src/params.h) changed"
};

// One cache entry as `kjit list` and `kjit show` describe it.
struct EntryInfo {
  std::string key;               // 64 hex digits
  std::string program_name;
  std::string arch;              // "sm_90", "compute_90"
  bool failed = false;           // a remembered compile error, not a binary
  std::int64_t created_unix = 0;
  std::size_t record_bytes = 0;  // the record as stored
  std::size_t cubin_bytes = 0;
  std::size_t ptx_bytes = 0;
  std::size_t source_bytes = 0;  // source and headers
  std::size_t log_bytes = 0;
  double compile_ms = 0;         // what the compile took: what each hit saves
};

// Selects entries: empty fields match everything.
struct EntryFilter {
  std::string name;  // program name, exactly or as its last path components ("saxpy.cu")
  std::string arch;  // "sm_90", exactly
};

// Everything one entry holds, for `kjit cat` and `kjit show`.
struct EntryContents {
  EntryInfo info;
  std::string program_txt;
  std::string options_txt;
  std::string source;
  std::map<std::string, std::string> headers;
  std::vector<std::string> options;  // exactly what NVRTC was given
  Binary binary;                     // PTX, cubin, lowered names, log, the original compile's timings
};

// What `kjit verify` found.
struct VerifyReport {
  std::size_t checked = 0;
  std::vector<std::pair<std::string, std::string>> bad;  // key (hex), why
  std::size_t quarantined = 0;                           // with Repair::quarantine
};
enum class Repair { no, quarantine };

// Lookups of every process that used a cache folder since the counts were zeroed (each process
// adds its CacheStats when its Cache goes away).
struct UsageTotals {
  std::uint64_t processes = 0;  // Caches that looked something up
  std::uint64_t memory_hits = 0;
  std::uint64_t disk_hits = 0;
  std::uint64_t bundle_hits = 0;
  std::uint64_t misses = 0;
  std::uint64_t compiles = 0;
  std::uint64_t remote_hits = 0;    // KJIT_REMOTE_CACHE: answered by the remote tier
  std::uint64_t remote_misses = 0;  // the remote had no record
  std::uint64_t remote_errors = 0;  // remote lookups that failed or returned a damaged record
  std::uint64_t remote_bytes_read = 0;
  std::uint64_t remote_bytes_written = 0;
  // Compiles not cached, by UncachedReason (CacheStats' fields of the same names).
  std::uint64_t uncached_formed_name = 0;
  std::uint64_t uncached_disk_name = 0;
  std::uint64_t uncached_time = 0;
  std::uint64_t uncached_file_option = 0;
  std::uint64_t uncached_probe = 0;
  std::uint64_t uncached_names_file = 0;
  std::uint64_t uncached_environment = 0;
  double compile_ms_saved = 0;
  double compile_ms_spent = 0;
};

// Sizes of a cache folder and the lookups of every process that used it, for `kjit stats`.
struct DiskUsage : UsageTotals {
  std::size_t entries = 0;
  std::size_t failures = 0;       // entries that remember a compile error
  std::size_t damaged = 0;        // entries whose record does not decode
  std::size_t quarantined = 0;    // rows in the quarantine table
  std::size_t record_bytes = 0;   // all records
  std::size_t cubin_bytes = 0;
  std::size_t ptx_bytes = 0;
  std::size_t source_bytes = 0;   // sources and headers
  std::size_t log_bytes = 0;
  std::size_t store_file_bytes = 0;  // data.mdb on disk
  std::size_t mirror_bytes = 0;      // programs/ (file sizes)
  double compile_ms_stored = 0;      // sum of the entries' compile times
};

// What an export or import did.
struct BundleReport {
  std::size_t entries = 0;          // written to the bundle / imported into the store
  std::size_t already_present = 0;  // import: good entries the store already had (left as they are)
  std::size_t skipped_damaged = 0;  // export: damaged store records (entries, scripts, tables) left out
  // import: key (an entry's hex, or a script's or table's "script/<hash>" row), why
  std::vector<std::pair<std::string, std::string>> rejected;
  // Script and dispatch-table records (a tuned kernel family: docs/scripts.md) written to the
  // bundle / added to the store (one the store has already and can read is left as it is; a
  // damaged one is replaced). Every script and table goes with every export, whatever the filter:
  // a few hundred bytes each. Each is checked as its reader will: a damaged one, or one whose
  // record holds another script's hash, is left out of an export and rejected by an import.
  std::size_t scripts = 0;
};

// Where the binary of one lookup came from.
enum class Source {
  memory,              // this process's memory tier, or another thread's lookup of the same key in flight
  disk,                // the LMDB store (entries this or an earlier process compiled)
  bundle,              // a read-only bundle (KJIT_BUNDLE), then promoted to the store
  remote,              // the remote tier (KJIT_REMOTE_CACHE), then written to the store
  compiled,            // compiled by this call
  compiled_elsewhere,  // compiled by another process while this one waited for it, then read from the store
};

// "memory", "disk", "bundle", "remote", "compiled", "compiled by another process".
const char* to_string(Source source) noexcept;

// One lookup's outcome. The binary's own `timings` are those of the compile that made it, possibly
// in another process long ago (what a hit saved); `lookup_ms` is what this call took.
struct Lookup {
  std::shared_ptr<const Binary> binary;  // never null
  Source source = Source::memory;
  double lookup_ms = 0;  // wall time of this call, preparing the program included when given one
  // The key (64 hex digits) of the entry served, where this lookup made it: a program with disk
  // headers or a PreparedProgram, once its key is final; a compile's stored entry (the key the
  // compile established: what NVRTC read; its commit may still be under way, Cache::stats()
  // waits for it; a commit that fails, or KJIT_MAX_SIZE removing the entry at once, leaves the key
  // naming none). Empty for one found by its raw inputs (no key computed: Cache::prepare() gives
  // it, without a header stat), and for a compile not stored (no writable store, not cached) or
  // made by another process while this one waited.
  std::string key;
};

// A program with its key already computed, for repeated lookups at memory-tier speed.
// Valid for the Cache that prepared it. Copyable. Only Cache::prepare() makes a usable one: a
// default-constructed PreparedProgram, or one moved from (the move hands the program over), is
// refused by Cache::get() and lookup() (kjit::Error).
class PreparedProgram {
public:
  const Program& program() const noexcept { return m_program; }
  const Arch& arch() const noexcept { return m_arch; }
  // The entry's name: sha256(program.txt ‖ options.txt), 64 hex digits. Provisional (see below)
  // until the program's first compile has shown which headers NVRTC reads.
  std::string key() const;
  // True when no manifest told which disk headers the program reads: key() and the texts are a
  // prediction, never looked up; the entry is stored under the key its compile establishes, which
  // prepare() returns from then on (docs/includes.md).
  bool provisional() const noexcept { return m_provisional; }
  const std::string& program_txt() const noexcept { return m_program_txt; }
  const std::string& options_txt() const noexcept { return m_options_txt; }
  // The disk headers the program includes (toolkit headers are covered by the toolchain part).
  const std::vector<IncludedHeader>& included_headers() const noexcept { return m_includes; }

private:
  friend class Cache;
  friend class Context;  // Context::load(prepared, binary) keys modules by m_from_disk
  Program m_program;
  Arch m_arch;
  std::vector<IncludedHeader> m_includes;
  std::array<std::uint8_t, 32> m_manifest_key{};  // the key without the disk headers: names the manifest (docs/keys.md)
  std::string m_program_txt;
  std::string m_options_txt;
  std::array<std::uint8_t, 32> m_key{};  // the prepared key: an entry key, or a provisional one
  bool m_provisional = false;
  bool m_from_disk = false;  // its key holds disk headers or the working directory: prepared again by get()
  // Set by prepare(); false in a default-constructed PreparedProgram and in one moved from, whose
  // key no longer goes with its (moved-out) program.
  struct Made {
    bool value = false;
    Made() = default;
    Made(const Made&) = default;
    Made& operator=(const Made&) = default;
    Made(Made&& other) noexcept : value(other.value) { other.value = false; }
    Made& operator=(Made&& other) noexcept
    {
      if (this != &other) {
        value = other.value;
        other.value = false;
      }
      return *this;
    }
  };
  Made m_made;
};

// One (program, arch) pair of a batch.
struct BatchItem {
  Program program;
  Arch arch;  // auto: as in get()
};

// The outcome of one item: a binary, or the error get() would have thrown.
struct BatchResult {
  std::shared_ptr<const Binary> binary;  // null on error
  std::exception_ptr error;              // rethrow to get the typed error
  std::string message;                   // error's what(), empty on success
  bool compiled = false;                 // true if this item was compiled (not a hit)
};

struct BatchOptions {
  unsigned jobs = 0;         // worker processes at once; 0: one per core
  double timeout_s = 600;    // per compile in a worker; the worker is killed past it (<= 0: none)
  // The kjit-worker executable. Empty: libkjit's own, the first found of: next to the running
  // executable, next to libkjit, where the build installed it, where the build made it (so an
  // application that builds kjit as a Meson subproject gets it). When it can't be started the
  // batch compiles in-process (one compile at a time: NVRTC is serial), with one warning.
  // Workers inherit the environment but for TMPDIR (a folder of their own) and NV_NVVM_VERSION
  // (the Cache's, as its keys name it), and compile with the Cache's toolkit (Config::cuda_home;
  // when empty, CUDA_HOME or CUDA_PATH, as for the Cache), never by their own KJIT_* settings.
  std::string worker_path;
  // Items with the same arch, options and in-memory headers (e.g. variants that differ only in
  // name expressions) are compiled next to each other with NVRTC's automatic precompiled headers
  // in the workers, when at least two share them. Off: every compile parses its headers again.
  bool pch = true;
  // Called after each item (from the batch's threads, one call at a time): done, total. An
  // exception it throws stops the batch (no item is started after it) and get_many() rethrows it
  // once the batch's threads have finished.
  std::function<void(std::size_t, std::size_t)> progress;
};

// Thread-safe; share one per process (see default_cache()). Not usable across fork(): a child
// process creates its own.
class Cache {
public:
  // Opens the cache folder described by `config` (creating it with mode 0700). Throws
  // StoreError if the folder is unsafe (owned by another user, or group/other-writable, unless
  // config.shared_cache); ConfigError for bad settings. A store that can't be opened at all
  // (another user's files, no address space for the map) is one warning: the cache then runs from
  // memory (has_disk_tier() is false).
  explicit Cache(const Config& config);
  Cache();  // current_config()
  ~Cache();
  Cache(const Cache&) = delete;
  Cache& operator=(const Cache&) = delete;

  // The binary for `program` on `arch` (auto: config.arch, then the current device): from memory,
  // else from LMDB, else compiled and stored. Throws what compile() throws; a program the
  // compiler rejected before throws the same CompileError again without compiling.
  std::shared_ptr<const Binary> get(const Program& program, const Arch& arch = Arch{});
  // Throws kjit::Error for a PreparedProgram that prepare() did not make (default-constructed or
  // moved from).
  std::shared_ptr<const Binary> get(const PreparedProgram& prepared);
  // get() that also says where the binary came from and how long this call took. Throws as get().
  Lookup lookup(const Program& program, const Arch& arch = Arch{});
  Lookup lookup(const PreparedProgram& prepared);

  // get() for many items at once: misses are compiled in worker processes (NVRTC runs one
  // compile at a time per process), `jobs` at a time, and stored through this cache exactly once
  // per key (items with the same key share one compile). A worker that crashes or hangs fails
  // only its item, with an Error saying so, and is replaced. Results are in the items' order;
  // never throws for an item's failure.
  std::vector<BatchResult> get_many(const std::vector<BatchItem>& items, const BatchOptions& options = {});

  // Computes the key once: hashes the source and in-memory headers, and finds the disk headers
  // it includes through a manifest (a stat() per header) or, the first time and after a change,
  // by resolving its includes. Resolves `auto` (CudaError without a usable driver, as compile()).
  // Throws CompileError for a missing include.
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
  // Empties both tiers, the manifests, the scripts and the mirror (the toolchain identities are kept).
  // Throws StoreError (and clears nothing on disk) when the store is read-only.
  void clear();
  // Rewrites programs/ and scripts/ (docs/scripts.md) from LMDB; returns the number of program
  // entries written. `skipped` (if given) receives the number of entries and scripts that could not
  // be written (damaged, a header blob missing, or a mirror error).
  std::size_t rebuild_mirror(std::size_t* skipped = nullptr);
  // The mirror is written by a background thread after each store; returns once everything this
  // Cache stored so far is in programs/ (the destructor does the same). Thread-safe.
  void flush_mirror();
  // Walks the whole store in a child process (time and memory bounded). A damaged store is moved
  // aside and replaced by a fresh one. Returns false if it was damaged; `report` says what was
  // found (rows walked, time, or the damage). A walk that could not run (no memory to map the
  // store, no child process) also returns false, leaves the store as it is, and its report reads
  // "<store>: not checked: <why>". Never throws.
  bool check_store(std::string& report);
  // Entries in the disk tier (0 without one).
  std::size_t disk_entries() const;

  // --- Operating the cache (inspect.cpp, bundles.cpp); each is also a `kjit` command. ---
  // Those that change the disk tier (verify with Repair::quarantine, prune_older_than,
  // prune_to_size, remove_mirror, zero_usage) throw StoreError without one (disabled, or its
  // store could not be opened) and on a read-only cache.
  // Entries matching `filter`, sorted by program name then arch. Damaged records are left out.
  std::vector<EntryInfo> entries(const EntryFilter& filter = {}) const;
  // The full key of the one entry whose hex key starts with `prefix`. Throws Error if none or
  // several match (the message names the prefix and, if ambiguous, the candidates).
  std::string resolve_key(const std::string& prefix) const;
  // Everything the entry `prefix` (see resolve_key) holds. Throws Error; StoreError if damaged.
  EntryContents entry(const std::string& prefix) const;
  // Decodes every record completely; with Repair::quarantine moves the bad ones aside.
  // `progress(done, total)` is called after each record if given.
  VerifyReport verify(Repair repair, const std::function<void(std::size_t, std::size_t)>& progress = {});
  // Removes entries created more than `seconds` ago (store and mirror); returns how many. A
  // negative age removes every entry (created before a moment to come).
  std::size_t prune_older_than(std::int64_t seconds);
  // Removes the least recently used entries (last use, else creation; docs/configuration.md,
  // "Size limit") until the entries, records and mirror folders, take at most `bytes`; returns how many.
  std::size_t prune_to_size(std::size_t bytes);
  // Deletes programs/ (the store is unaffected); returns false if there was none.
  bool remove_mirror();
  DiskUsage usage() const;
  // Zeroes the lookup counts usage() sums across processes.
  void zero_usage();
  // Writes the entries matching `filter` (records as stored, with the toolchain identities) to
  // the bundle `path`. Throws BundleError if it can't be written.
  BundleReport export_bundle(const std::string& path, const EntryFilter& filter = {});
  // Checks the whole bundle (BundleError if damaged or truncated: nothing is imported), then
  // verifies every entry (decode_record: checksums, key, cubin) and stores the good ones in one
  // transaction; an entry already good in the store is kept, a bad one is never stored.
  // Throws StoreError if the store is read-only or missing.
  BundleReport import_bundle(const std::string& path);

  const Config& config() const noexcept;
  bool has_disk_tier() const noexcept;
  // False only for a Config::inspect_only cache whose folder holds no store yet (an empty cache:
  // looking creates nothing), where has_disk_tier() is false without any damage.
  bool store_exists() const noexcept;
  // False when the cache folder is read-only: misses are then kept in memory only.
  bool writable() const noexcept;
  // Why entries are not kept on disk: the store was refused or could not be opened (the reason
  // the warning gave), it is read-only, or the error of the last commit that failed (kept after
  // later commits succeed: it says why an entry is missing). Empty when nothing of that happened,
  // and with Config::disable_cache. Waits for commits under way (not to be called from the log
  // sink).
  std::string store_problem() const;
  // The LMDB folder (<cache_dir>/store, or a node-local folder when cache_dir is on a network
  // filesystem). Empty without a disk tier.
  std::string store_path() const;

  struct Impl;

private:
  // `key`, when given, gets the served entry's key where the lookup computed a final one.
  std::shared_ptr<const Binary> get_program(const Program& program, const Arch& arch, Source& source,
                                            std::string* key = nullptr);
  std::shared_ptr<const Binary> get_prepared(const PreparedProgram& prepared, Source& source,
                                             std::string* key = nullptr);
  // A compile's entry key, when it was given to the store, goes to `stored_key` (when given).
  std::shared_ptr<const Binary> get_once(const PreparedProgram& prepared, Source& source,
                                         std::string* stored_key = nullptr);
  // get_once(), and in `key` (when given) the key of a hit it served or of the entry it compiled.
  std::shared_ptr<const Binary> get_keyed(const PreparedProgram& prepared, Source& source, std::string* key);
  // get_keyed() of `program` prepared again, a few times while a tracked header keeps changing.
  std::shared_ptr<const Binary> get_prepared_again(const Program& program, const Arch& arch, Source& source,
                                                   std::string* key);
  std::unique_ptr<Impl> m_impl;
};

// One finding of diagnose() (`kjit doctor`).
struct HealthCheck {
  enum class Status { ok, warning, error };
  Status status = Status::ok;
  std::string what;    // "toolkit", "NVRTC", "driver", "cache folder", "filesystem", "store", "bundle"
  std::string detail;  // what was found, and what to do about a problem
};

// Checks the toolkit, NVRTC and nvJitLink (loading them to read their versions), the driver and
// its devices, the cache folder (existence, owner, mode, writable, filesystem), the store's
// records and the configured bundles. Never creates the cache folder; never throws for a check
// that fails (it becomes an error finding).
std::vector<HealthCheck> diagnose(const Config& config);

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
