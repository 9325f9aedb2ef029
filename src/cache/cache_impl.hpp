// Cache::Impl: the state behind kjit::Cache. Its named parts (statistics.hpp, in_flight.hpp,
// reported.hpp, manifest_book.hpp, size_account.hpp) each hold their own lock; the tiers (memory,
// store, the lower tiers of tier/) and the mirror writer are their own objects. What is left here
// is the work that joins them, one file per job: lookup.cpp (the disk tier and the compile path),
// includes.cpp and manifest_record.cpp (manifests), tiers.cpp (the walk below the store),
// size_limit.cpp and eviction.cpp, mirroring.cpp, and the public Cache calls in cache.cpp,
// inspect.cpp, explain.cpp, bundles.cpp.
#pragma once

#include <kjit/cache.hpp>
#include <kjit/error.hpp>

#include "cache/cache_dir.hpp"
#include "cache/direct_index.hpp"
#include "cache/key.hpp"
#include "cache/in_flight.hpp"
#include "cache/manifest_book.hpp"
#include "cache/memory_tier.hpp"
#include "cache/reported.hpp"
#include "cache/size_account.hpp"
#include "cache/statistics.hpp"
#include "tier/tier.hpp"
#include "deps/manifest.hpp"
#include "mirror/writer.hpp"
#include "cache/speculation.hpp"
#include "remote/remote_tier.hpp"
#include "store/committer.hpp"
#include "store/entry.hpp"
#include "store/store.hpp"
#include "util/test_hook.hpp"

#include <atomic>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <unordered_set>
#include <unistd.h>

namespace kjit {

namespace cache {
// The CacheStats counter of the compiles not cached for `reason`.
std::uint64_t CacheStats::*uncached_counter(UncachedReason reason) noexcept;
} // namespace cache

namespace cache {
class CompileLock;
// inspect.cpp: whether an entry passes a list/export filter (a name matches whole last path
// components: "saxpy.cu" matches "/src/saxpy.cu").
bool entry_matches(const EntryFilter& filter, const store::Entry& entry);
// size_limit.cpp: the meta row holding an entry's last use (unix time as text), and its value
// (0 when none is recorded).
std::string used_row(std::string_view raw_key);
std::int64_t recorded_use(const store::Store& store, std::string_view raw_key);
// size_limit.cpp: the most the blob table's pages can grow by when a blob row of `bytes` (key and
// raw content) is written: its encoding, rounded up to whole pages, plus a page split.
std::size_t blob_growth_bound(std::size_t bytes);

// Thrown inside the cache when a tracked header changed between prepare() and compile: the
// program is prepared again. Never leaves the library.
struct HeadersChanged {};

// Thrown by prepare() inside a lookup that may compile ahead once its program's manifest is
// outdated (speculation.hpp, OutdatedManifestScope), where it would predict the headers instead.
// Never leaves the library.
struct ManifestOutdated {
  OutdatedRow row;  // the store's row found so (a row of zeros: none, the Cache's copy was)
};

// lookup.cpp: what a lookup hands out for a stored entry (its binary, or its compile error).
Result result_of(store::Entry&& entry);
// The same, the entry left as it is (its binary copied).
Result result_of(const store::Entry& entry);
} // namespace cache

struct Cache::Impl {
  Config config;
  cache::CacheDir dir;
  std::shared_ptr<store::Store> store;  // null without a disk tier
  cache::MemoryTier memory;
  std::vector<std::unique_ptr<tier::Tier>> tiers;  // tiers after the store (bundles, then the remote), in order
  remote::RemoteTier* remote = nullptr;             // the last of `tiers` when KJIT_REMOTE_CACHE is set

  std::mutex context_mutex;
  std::optional<cache::KeyContext> context;
  // The rows that remember the context in the store, made with it (key_context.cpp) and written
  // with the next entry's commit (persist()), else at the end of the public call that made them
  // (ToolchainRowsAtEnd), or when the Cache goes (flush_uses(): rows a failed commit gave back);
  // under context_mutex.
  std::vector<store::Store::Row> toolchain_rows;
  std::atomic<bool> toolchain_rows_held{false};  // !toolchain_rows.empty(), read without the lock
  std::string inputs_toolchain;  // cache::inputs_toolchain(*context), made with it
  cache::DirectIndex direct_index;   // this process's input digests → entry keys (direct_lookup.cpp)
  cache::KnownPrograms known_programs;  // programs found or compiled here: never speculated (speculation.hpp)

  // The named parts, each with its own lock.
  cache::ManifestBook manifests;  // manifests and provisional keys (includes.cpp, predicted_hit.cpp)
  cache::InFlight in_flight;      // lookups under way, by key (Cache::get_once)
  cache::Reported reported;       // damaged entries and tier problems already logged
  cache::Statistics statistics;   // the counters of stats(), and store_problem()
  cache::SizeAccount size;        // the size limit's count and the last uses to write (size_limit.cpp)

  explicit Impl(const Config& c) : config(c), memory(c.memory_limit) {}
  ~Impl();  // usage_log.cpp: appends this cache's lookup counts to the folder's usage log
  pid_t creator = ::getpid();
  // Last: destroyed first, so its queue is written while the store is still open.
  std::unique_ptr<mirror::Writer> mirror_writer;
  // persist()'s commits on the store's writer thread whose report has not run yet: stats() and
  // the destruction (this is destroyed first) wait for them.
  store::Outstanding commits;

  // The counters, with the memory tier's own hit counts (MemoryTier::find_hit, count_hit) and the
  // bytes the remote tier wrote added.
  CacheStats stats_now() const;
  // Puts `result`, found or made by a lookup from `source`, in the memory tier: a disk hit is
  // admitted (kept from its second disk hit on), anything else inserted.
  void keep(const util::Sha256& entry_key, const cache::Result& result, Source source);
  // Made once; `fingerprint_later` as toolchain_context() has it, for the call that makes it.
  const cache::KeyContext& key_context(bool fingerprint_later = false);
  // Makes the key context (fingerprint later) when that takes no NVRTC compile: the toolchain's
  // versions are remembered (the store, the fleet, this process). Whether it is made.
  bool key_context_if_known();
  // Makes `context` (context_mutex held): key_context()'s work; with `only_if_known`, false (and
  // nothing made) where it would compile NVRTC's probe or meets a StoreError.
  bool make_key_context(bool fingerprint_later, bool only_if_known);
  // The toolchain_rows not written yet (and none left).
  std::vector<store::Store::Row> take_toolchain_rows();
  // `rows` (taken, their commit failed) are toolchain_rows again.
  void put_back_toolchain_rows(std::vector<store::Store::Row> rows);
  // Queues the toolchain_rows no entry's commit took in a commit of their own (Store::put_later:
  // process exit and quick_exit() wait for it). ToolchainRowsAtEnd calls it.
  void queue_toolchain_rows() noexcept;
  // Held by each public call that may make the key context: at the end of the outermost one on a
  // thread, the toolchain rows no entry's commit took (a hit, an uncached compile, explain) are
  // queued in a commit of their own, so that a process that ends without destroying its Cache
  // (quick_exit(), a forked child's _exit()), or another Cache of this process on the same
  // folder, finds them. Within the call they wait for its entry's commit (a fresh node's first
  // hit: one fdatasync, not two).
  class ToolchainRowsAtEnd {
  public:
    explicit ToolchainRowsAtEnd(Impl& impl);
    ~ToolchainRowsAtEnd();
    ToolchainRowsAtEnd(const ToolchainRowsAtEnd&) = delete;
    ToolchainRowsAtEnd& operator=(const ToolchainRowsAtEnd&) = delete;

  private:
    Impl& m_impl;
  };
  // Held by a thread that works for a public call of another thread (prepare_beside()): that
  // call's end queues the rows, not this thread's.
  class ToolchainRowsOnBehalf {
  public:
    ToolchainRowsOnBehalf() noexcept;
    ~ToolchainRowsOnBehalf();
    ToolchainRowsOnBehalf(const ToolchainRowsOnBehalf&) = delete;
    ToolchainRowsOnBehalf& operator=(const ToolchainRowsOnBehalf&) = delete;
  };
  void verbose(const char* what, const PreparedProgram& p, double ms);
  void verbose(const char* what, const std::string& name, const Arch& arch, const util::Sha256& key, double ms);
  // `key` null: a line without a key (a compile that was not cached names no entry).
  void verbose(const char* what, const std::string& name, const Arch& arch, const util::Sha256* key, double ms);

  // direct_lookup.cpp: a lookup by the program's raw inputs (cache::direct_options programs;
  // only direct_eligible ones are ever found): the memory tier, then the store's direct row and
  // the entry it names, all without SHA-256.
  struct Direct {
    std::string inputs;       // cache::direct_inputs()
    util::Checksum input_digest{};    // XXH3-128 of them
    std::optional<cache::Result> hit;
    std::optional<cache::Result> in_memory;  // load_entry(): the row named an entry of the memory tier
  };
  Direct direct_lookup(const Program& program, const Arch& arch, Source& source);
  // cache::direct_inputs() in this cache's key context; `arch` resolved.
  std::string direct_inputs(const Program& program, const Arch& arch);

  // includes.cpp: the user headers of a program from a manifest whose every stamp still holds
  // (stats only), or nullopt when there is none: then only a compile can tell. `outdated`, when
  // given, says whether there was a manifest in `context` each of whose resolutions has a header
  // whose content changed or vanished (deps::Validation::headers_changed).
  std::optional<deps::Resolution> valid_manifest(const util::Sha256& manifest_key, const std::string& context,
                                                 bool* outdated = nullptr, util::Checksum* outdated_row = nullptr);
  // valid_manifest()'s check of one manifest (`from_store`: read from the store just now).
  // With `rest`, its entries follow `manifest`'s and are read only as far as the check goes (the
  // whole manifest when an entry past the first holds, to put it first).
  std::optional<deps::Resolution> valid_entry(const util::Sha256& manifest_key, cache::KnownManifest& manifest,
                                              bool from_store, bool* outdated, deps::ManifestReader* rest = nullptr);
  // Puts a compile's final resolution first in the manifest of `manifest_key` (stored with the
  // commit); with `ahead`'s packed bytes when they are that same manifest's (PackedManifest).
  void record_manifest(const util::Sha256& manifest_key, const std::string& context, const deps::Resolution& resolution,
                       cache::PackedManifest* ahead = nullptr);
  // The manifest of `manifest_key` in `context` with `entry` first: this process's copy, else the
  // store's (version 0; `stored_row` set to its row's checksum), at most deps::k_manifest_entries entries.
  cache::KnownManifest manifest_with(const util::Sha256& manifest_key, const std::string& context, deps::Resolution entry,
                                     util::Checksum* stored_row = nullptr);
  // What record_manifest() would store for the resolution of `prediction` (of `program`, closed),
  // encoded and packed now (beside NVRTC); nullopt when it records nothing.
  // An entry of `copy` (KnownManifest::packed_whole) that holds, read from its packed row.
  std::optional<deps::Resolution> valid_packed(const util::Sha256& manifest_key, const cache::KnownManifest& copy,
                                               bool* outdated);
  // The store's row merged into `copy` when it is not `copy`'s (nor one it took in): its entries
  // `copy` lacks first, its states let go kept. `stored_row`, when given, is set to the row's
  // checksum then.
  void merge_stored_row(const util::Sha256& manifest_key, cache::KnownManifest& copy,
                        util::Checksum* stored_row = nullptr);
  // Whether `ahead` was made from the base its record would take now (manifest_with()).
  bool packed_ahead_holds(const cache::PackedManifest& ahead);
  std::optional<cache::PackedManifest> manifest_ahead(const Program& program, const util::Sha256& manifest_key,
                                                      const deps::Resolver& prediction);
  // Keeps the manifest in memory; `now` also stores it, else it waits for take_unsaved_manifest()
  // (which stores `packed` when given: its bytes, packed ahead).
  void save_manifest(const util::Sha256& manifest_key, const cache::KnownManifest& manifest, bool now,
                     std::string packed = {});
  // Makes `manifest` the book's copy of `manifest_key`, a new version of it. manifests.mutex held.
  void keep_known(const util::Sha256& manifest_key, const cache::KnownManifest& manifest);
  bool is_provisional(const util::Sha256& key);
  // The store's manifest of `manifest_key` (raw bytes) made in `context`, unpacked and decoded;
  // nullopt when there is none, or it is damaged or of another context. The store must be open.
  // `row`, when given, is set to the checksum of the row read (left as it is when there is none);
  // `let_go`, to the states the manifest let go (untracked for a row that does not decode).
  std::optional<deps::Manifest> stored_manifest(std::string_view manifest_key, const std::string& context,
                                                util::Checksum* row = nullptr, deps::LetGo* let_go = nullptr);
  // The text of that row, unpacked ("" for a row that does not unpack: no manifest decodes from it);
  // nullopt when there is none. `row` as for stored_manifest().
  std::optional<std::string> stored_manifest_text(std::string_view manifest_key, util::Checksum* row = nullptr);
  // The checksum of the store's manifest row of `manifest_key` (raw bytes), or nullopt when there
  // is none. The store must be open.
  std::optional<util::Checksum> stored_row_of(std::string_view manifest_key);
  // Whether this thread was told the store's manifest row of `manifest_key` (raw bytes) is outdated
  // (cache::OutdatedRowScope) and the store still holds that row.
  bool known_outdated(std::string_view manifest_key);
  // For explain: what makes the manifest of `manifest_key` invalid now (headers, folders), or that
  // none was made in this resolution context. Stats and reads only; changes nothing.
  std::vector<std::string> manifest_changes(const util::Sha256& manifest_key, const std::string& context);
  // closure_seed.cpp: the seed_key() of `program` in this cache's key context (all zero: none).
  util::Sha256 closure_seed_key(const Program& program, const deps::SearchContext& search);
  // A resolver seeded with a closure another compile of `program` recorded (another arch, other
  // name expressions), found unchanged on disk with every header read again; null when there is
  // none (then the headers are predicted). docs/includes.md, "A closure used again".
  std::shared_ptr<deps::Resolver> seeded_resolver(const Program& program, const deps::SearchContext& search);
  // The prediction a miss compiles from: seeded_resolver()'s (when `may_seed`), else a new one,
  // predict()ed.
  std::shared_ptr<deps::Resolver> predicted_resolver(const Program& program, const deps::SearchContext& search,
                                                     bool may_seed = true);
  // predicted_resolver() of `given` as prepare() will see it (as NVRTC reads it, with the
  // toolkit's include folders), made before the key context.
  std::shared_ptr<deps::Resolver> prediction_ahead(const Program& given);
  // The seeded resolver of the entry of `manifest` (made in `context`) whose closure has `seed`, when
  // its headers are unchanged (and, for another program's closure, `directives` fit the source).
  std::shared_ptr<deps::Resolver> seeded_from(const Program& program, const deps::SearchContext& search,
                                              const std::string& manifest_key, const std::string& context,
                                              const util::Sha256& seed, const std::set<std::string>* directives);
  // NVRTC's identity and the toolkit headers' fingerprint: what a closure's keys hold of the toolchain.
  std::string toolchain_text();
  // After a compile that predicted its headers: `resolution` (its closure set) is what later
  // compiles of this program, and of other programs of its library, may start from.
  void offer_closure(const Program& program, const deps::SearchContext& search, const util::Sha256& manifest_key,
                     deps::Resolver& resolver);
  // The meta rows offer_closure() left for the manifest of `prepared` (and forgets them).
  std::vector<store::Store::Row> take_closure_rows(const PreparedProgram& prepared);
  // The store row of a manifest not stored yet, if any (and forgets that it is unsaved).
  // (The manifest's row and its head's: none when nothing is unsaved.)
  std::vector<store::Store::Row> take_unsaved_manifest(const PreparedProgram& prepared);
  // The row of the head (deps/manifest_head.hpp) of `manifest`, whose row's value is `row`;
  // nullopt where none can be made (a copy that holds its newest entry alone, a packed one whose
  // head was not made with it).
  std::optional<store::Store::Row> head_row(const util::Sha256& manifest_key, const cache::KnownManifest& manifest,
                                            const std::string& row);
  // A lookup decided by the store's head of the manifest (`decided`): the newest entry that holds,
  // or none with `*outdated` set (every entry read an edited header otherwise); else undecided
  // (no head, one of another row, a folder left out of it changed, an entry it can't tell of):
  // the manifest is read.
  std::optional<deps::Resolution> valid_head(const util::Sha256& manifest_key, const std::string& context, bool* outdated,
                                             util::Checksum* outdated_row, bool& decided);
  // valid_head()'s hit on a newest entry whose headers were touched (`validated`: its headers with
  // their stamps now): the store's manifest (row `row`) stored again with them.
  std::optional<deps::Resolution> with_new_stamps(const util::Sha256& manifest_key, const std::string& context,
                                                  const util::Checksum& row, const deps::Resolution& validated,
                                                  bool& decided);

  // lookup.cpp: the disk tier and the compile path.
  // `name` and `arch` (of the program) only name it in the warning about a damaged record.
  std::optional<store::Entry> load(const util::Sha256& entry_key, const std::string& name, const Arch& arch);
  // load(), or with `via` the entry its direct row names (`entry_key` is set from the row), both
  // rows read in one transaction. The record's own key field must equal `entry_key`
  // (decode_record). An entry the memory tier holds is not read: it goes to via->in_memory, and
  // nullopt is returned.
  std::optional<store::Entry> load_entry(util::Sha256& entry_key, const std::string& name, const Arch& arch, Direct* via);
  // `source` says where the result came from (disk, bundle, compiled, compiled_elsewhere);
  // `keepable` is false for a compile that is not cached (compiled from the files on disk): the
  // memory tier must not keep it either.
  cache::Result load_or_compile(const util::Sha256& prepared_key, const PreparedProgram& prepared, Source& source,
                                bool& keepable);
  // Compiles with exactly the headers kjit hashed; `compiled_entry_key` is the key of what was compiled
  // (it differs from the prepared key when the compile needed headers the prediction missed).
  // `cacheable` is false when it was compiled from disk (resolver unfaithful): never stored.
  // `compiled_with` gets the resolver it compiled with (see persist()'s `release_after`).
  store::Entry compile_entry(const PreparedProgram& prepared, util::Sha256& compiled_entry_key, bool& cacheable,
                             std::shared_ptr<deps::Resolver>& compiled_with);
  // Stores the entry (record, name, headers, direct row, manifest) in one transaction committed on
  // the store's writer thread (Store::put_later); `lock` (the key's compile lock, may be null) is
  // released once the commit is durable, so a process waiting for the key then finds it. A store
  // error is counted and logged once; the caller already has its binary (and the memory tier).
  // `release_after` (a resolver: a vendored CCCL's took 44 ms to free) goes on the writer thread
  // after the commit, not on the caller's path. False when there is no writable store (nothing queued).
  bool persist(const util::Sha256& entry_key, const PreparedProgram& prepared, store::Entry entry,
               std::shared_ptr<cache::CompileLock> lock = nullptr,
               std::vector<std::shared_ptr<const void>> release_after = {});
  // ptx_reuse.cpp: for a virtual arch, the PTX of the same program stored for its real arch (in
  // memory or the store), or nullopt. Throws OptionError as a compile for `arch` would.
  // Closes the resolver first; nullopt when it is unfaithful.
  std::optional<Binary> ptx_of_real_arch(const Program& program, const Arch& arch, deps::Resolver& resolver);

  // predicted_hit.cpp: for a provisional key, its prediction's own key (`predicted_entry_key`, what a compile
  // that needs no further header stores) and the prediction; null when there is none (no
  // prediction kept, a file changed since, or one only the disk can answer).
  std::shared_ptr<deps::Resolver> predicted_key(const PreparedProgram& prepared, util::Sha256& predicted_entry_key);
  // Starts `speculation` for a lookup of `program` when it may (speculation.hpp, may_speculate()):
  // not for a name and arch this Cache served, nor while another compile of this process is
  // watched; for one whose entry may serve it, only once its manifest is outdated (the verdict
  // says so). Throws prepare()'s errors for bad -I/-D options.
  cache::AheadVerdict speculate(const Program& program, const Arch& arch, std::optional<cache::Speculation>& speculation);
  // cache::entries_without_program_rows_may_serve() in this Cache's store (true when the store
  // can't say, or there is none).
  bool entry_without_rows_may_serve(const Program& program, const Arch& arch);
  // Starts `speculation` for `program` on `arch`, when a watch can be had.
  void speculate_now(const Program& program, const Arch& arch, std::optional<cache::Speculation>& speculation);
  // What a speculative miss's preparing thread does after prepare(), while NVRTC compiles
  // (prepare_beside()): its prediction (kept by the Speculation, seen by no other lookup) closed,
  // and the mirror's writes of its headers started (mirror_headers_early()), off the caller's path.
  // Returns the blobs of its headers that the store lacks, encoded (store::Entry::encoded_blobs);
  // adds to `stored` the hashes of those whose intact blobs the store holds.
  std::map<util::Sha256, std::string> prepare_ahead(deps::Resolver& prediction, std::set<util::Sha256>& stored);
  // predicted_hit.cpp: for a provisional key, the entry stored under its prediction's own key
  // (`predicted_entry_key`), from the store or a tier, or nullopt; a hit records the manifest that leads to it
  // and sets `source` to where it came from. `prediction`: predicted_key()'s, null when there is none.
  std::optional<store::Entry> load_predicted(const PreparedProgram& prepared, util::Sha256& predicted_entry_key,
                                             Source& source, std::shared_ptr<deps::Resolver>& prediction);
  // predicted_hit.cpp: records (and stores) the manifest that leads from the program's raw inputs
  // to `prediction`'s key, for an entry found under that key.
  void remember_prediction(const PreparedProgram& prepared, deps::Resolver& prediction);

  // size_limit.cpp: last use, recorded in batches, and eviction by it (docs/configuration.md).
  // Notes that `entry_key` served a disk hit (memory only; flush_uses() writes it; the memory tier
  // notes its own hits).
  void note_use(const util::Sha256& entry_key);
  // Writes the last use of the keys noted since the last flush, in one transaction, skipping
  // those whose recorded use is less than an hour old. Never throws.
  void flush_uses() noexcept;
  // After an entry was queued for writing (`record_bytes` of counted rows, header blobs that can
  // grow their table by `blob_bound` at most): flushes the uses and, with config.max_size, evicts
  // the least recently used entries down to 90% of it once this process's count passes it. Never
  // throws.
  void after_write(const util::Sha256& key, std::size_t record_bytes, std::size_t blob_bound) noexcept;
  // The process's first count of the store and the mirror for KJIT_MAX_SIZE, before its first write
  // is queued: counted in after_write(), it waited for that write's commit on the caller's path
  // (≈ 0.1 s for a vendored CCCL's entry). After it, after_write() adds what each write adds.
  void count_before_write() noexcept;
  // Under size.mutex: the count itself, the store's count row's (store::k_size_count) when it is
  // less than a day old, else a full one (evict_to()), which the row keeps.
  void count_now();
  // Writes `bytes` as the store's count, found by a full count now (never throws: a row not
  // written makes the next process count again).
  void keep_count(std::size_t bytes) noexcept;
  // Adds to `rows` (a write's) the row that adds `bytes` to the store's count (whatever this
  // process's limit), after the row of a full count this process made (the first write of a
  // store without one, with a limit).
  void add_to_count(std::vector<store::Store::Row>& rows, std::size_t bytes);
  // eviction.cpp: removes least recently used entries (last use, else creation) until the
  // entries (records + mirror) take at most `bytes`; returns how many were removed, and the
  // bytes left in `remaining`.
  std::size_t evict_to(std::size_t bytes, std::size_t& remaining);

  // mirroring.cpp: the mirror, written by a background writer (null when off or not writable).
  // What an entry's folder will take, guessed before the writer's turn (0 without a mirror).
  std::size_t mirror_guess(const store::Entry& entry) const;
  std::mutex dir_mutex;  // follow_cache_dir() of `dir`, on a write
  void open_mirror();
  // Queues the entry's mirror folder (off the caller's path); its headers must be loaded. `guess`:
  // mirror_guess() of it, which the write that stored it added to the store's count.
  void mirror_entry(const util::Sha256& entry_key, store::Entry entry, std::size_t guess);
  // Queues the shared mirror files of the headers of a program about to compile: written while
  // NVRTC runs (on the other core), the entry's folder then only links them.
  // `taken`: texts of the resolution already let go (deps::Resolver::shed_texts()), moved here.
  void mirror_headers_early(const deps::Resolution& resolution, std::vector<mirror::EarlyHeader> taken = {});
  // After entries were removed from the store: their mirror folders go now, the shared headers
  // they alone used and their index lines on the writer's thread.
  void mirror_removed(const std::vector<std::string>& raw_keys);
  // Whether the store holds the header blob named by 64 hex digits.
  bool has_blob(const std::string& hex) const;
  // Every stored entry as a line of programs/index.txt (reads only the records' first fields).
  std::vector<mirror::IndexRow> index_rows() const;

  // tiers.cpp: the tiers below the store.
  void open_tiers();
  // The entry from the first tier that has a good record for `entry_key`, backfilled into the store;
  // failures and damaged records are counted and logged, never thrown. `source` is set to the
  // answering tier's on a hit.
  std::optional<store::Entry> load_from_tiers(const util::Sha256& entry_key, const PreparedProgram& prepared,
                                              Source& source);
  // Verifies a tier's answer for `entry_key`: a good record is counted, promoted to the store and
  // returned; a damaged one or a failure is counted and logged (once), never thrown.
  std::optional<store::Entry> take_answer(tier::Tier& tier, tier::TierAnswer answer, const util::Sha256& entry_key,
                                          const PreparedProgram& prepared);
  // Before a compile, with a remote tier: takes the fleet's compile lease on `entry_key` (into `lease`),
  // or waits (KJIT_COMPILE_LOCK_TIMEOUT at most) for the node that holds it and returns its
  // verified record, promoted to the store. nullopt: compile (with the lease if it was taken).
  std::optional<store::Entry> await_fleet(const util::Sha256& entry_key, const PreparedProgram& prepared,
                                          remote::Lease& lease);
  // Offers a binary this process compiled to every tier that keeps puts (the remote), as a
  // self-contained record. Compile errors are not offered. Never throws.
  void offer_to_tiers(const util::Sha256& entry_key, const store::Entry& entry) noexcept;
};

namespace cache {

// Tests: called by Cache::rebuild_mirror and export_bundle between listing the store's keys and
// reading each, where another process's prune may remove some. Empty: none.
KJIT_TEST_HOOK void set_listed_keys_hook(std::function<void()> hook);
KJIT_TEST_HOOK void run_listed_keys_hook();

} // namespace cache

// The bytes of a digest, as LMDB keys them.
inline std::string_view bytes_of(const util::Sha256& digest)
{
  return {reinterpret_cast<const char*>(digest.data()), digest.size()};
}

} // namespace kjit
