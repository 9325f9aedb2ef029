// A first miss compiled while its key is made: NVRTC compiles the program from the files on disk,
// as `--no-cache` does, with its file accesses watched (rtc::FileWatch), while another thread
// resolves the headers and makes the key. The binary is kept when NVRTC met
// on disk only what the key answers for (docs/includes.md, "A first miss"); else the program is
// compiled as before, from the private folder.
#pragma once

#include <kjit/arch.hpp>
#include <kjit/cache.hpp>
#include <kjit/binary.hpp>
#include <kjit/config.hpp>
#include <kjit/program.hpp>

#include "cache/manifest_book.hpp"
#include "deps/resolver.hpp"
#include "rtc/file_watch.hpp"
#include "store/store.hpp"
#include "util/hash.hpp"
#include "util/test_hook.hpp"

#include <cstdint>
#include <exception>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <set>
#include <utility>
#include <vector>

namespace kjit::cache {

class Speculation {
public:
  // `program` for `arch` (resolved), to be compiled by compile() or prepare_beside(), watched by
  // `watch` (claimed: one compile of a process is watched at a time).
  Speculation(const Config& config, Program program, const Arch& arch, std::unique_ptr<rtc::FileWatch> watch);
  Speculation(const Speculation&) = delete;
  Speculation& operator=(const Speculation&) = delete;

  // Compiles on this thread from the disk, NVRTC's accesses watched; the outcome is kept for
  // adopt() and from_disk() (never thrown here).
  void compile();
  // Nothing is compiled: adopt() refuses, from_disk() has nothing.
  void skip(std::string why) { m_blind = std::move(why); }

  bool is_for(const Program& program, const Arch& arch) const;
  // The compile's binary when every user file NVRTC found is a header of `resolver` (closed),
  // every name it looked for and did not find is one `resolver` watches, and nothing of
  // `resolver` changed since the compile began; nullopt when not (`why` says what), and the
  // program is then compiled as usual. Throws the compile's CompileError when it failed on what
  // the key answers for, as the usual compile would. A kept binary that names a file NVRTC opened
  // under a portable key marks `resolver` copies_named(): compiled from the disk, not cached.
  std::optional<Binary> adopt(deps::Resolver& resolver, std::string& why);
  // The prediction prepare() made on the preparing thread (SpeculationPrediction), kept here, not
  // in the Cache's predictions: no other lookup of the Cache (another thread's of the same program)
  // may use the resolver while that thread closes it. The compile takes it once (take_prediction).
  // The lookup's own thread peeks at it (predicted_key(): a project that moved finds its entries).
  void keep_prediction(std::shared_ptr<deps::Resolver> prediction) { m_prediction = std::move(prediction); }
  std::shared_ptr<deps::Resolver> take_prediction() { return std::move(m_prediction); }
  // The prediction's headers that the store lacks, encoded for it (store::Entry::encoded_blobs)
  // on the preparing thread; taken once.
  void keep_encoded_blobs(std::map<util::Sha256, std::string> blobs);
  std::map<util::Sha256, std::string> take_encoded_blobs() { return std::move(m_encoded_blobs); }
  // The manifest its entry's commit stores, packed on the preparing thread (Cache::Impl::
  // manifest_ahead()); record_manifest() takes its bytes when they are still that manifest's.
  void keep_packed_manifest(std::optional<PackedManifest> manifest) { m_packed_manifest = std::move(manifest); }
  PackedManifest* packed_manifest() { return m_packed_manifest ? &*m_packed_manifest : nullptr; }
  const std::shared_ptr<deps::Resolver>& prediction() const { return m_prediction; }

  // Whether compile() ran NVRTC, and for how long (the compile's own timings; 0 when it failed).
  bool compiled() const { return m_binary.has_value() || m_compile_error; }
  double compile_ms() const { return m_binary ? m_binary->timings.total_ms : 0; }
  // Whether its binary (or failure) was taken: adopt() kept it, or from_disk() gave it.
  bool taken() const { return m_taken; }

  // The binary NVRTC made from the disk (whatever it read), for a program compiled from the disk
  // and not cached: throws its CompileError; nullopt when it made none for another reason.
  std::optional<Binary> from_disk();

  // After adopt() refused: what NVRTC met on disk that the resolution does not answer for, by
  // path: user files it found (an include the prediction missed, or a probe's file) and names it
  // looked for in vain that the resolution does not watch.
  struct Unheld {
    std::vector<std::string> found;
    std::vector<std::string> absent;
  };
  const Unheld& unheld() const { return m_unheld; }

private:
  // Empty when every access of the compile is one `resolver` answers for; else the first that is
  // not. With `unheld`, each such file or name is named there and the accesses after it are still
  // checked: every one is named unless another reason stops the check first (that reason is said).
  std::string unanswered(const deps::Resolver& resolver, Unheld* unheld = nullptr) const;
  // Whether the binary holds the name NVRTC gave a user file it opened (__FILE__ formed where kjit
  // reads no word of it: a paste, a toolkit macro): a key that names no file can't hold it.
  bool names_a_file(const deps::Resolver& resolver) const;

  Config m_config;
  Program m_program;
  Arch m_arch;
  // deps::stamp_clock_ns() when made: before NVRTC started and before the headers were read (a
  // header whose stamp is not too new by then shows every later change in its stamp).
  std::int64_t m_start_ns = 0;
  // deps::Resolver::steady_now_ns() when NVRTC returned (never, until then).
  std::int64_t m_compiled_ns = std::numeric_limits<std::int64_t>::max();
  std::optional<Binary> m_binary;
  Unheld m_unheld;
  std::exception_ptr m_error;
  bool m_compile_error = false;  // m_error is a CompileError
  std::string m_blind;           // rtc::FileWatch::blind(), or why nothing was watched
  std::vector<rtc::FileAccess> m_accesses;
  std::unique_ptr<rtc::FileWatch> m_watch;
  bool m_taken = false;
  std::shared_ptr<deps::Resolver> m_prediction;
  std::map<util::Sha256, std::string> m_encoded_blobs;
  std::optional<PackedManifest> m_packed_manifest;
};

// While alive, prepare() on this thread puts its prediction in `slot` instead of the Cache's
// predictions (speculation_prediction() says where).
class SpeculationPrediction {
public:
  explicit SpeculationPrediction(std::shared_ptr<deps::Resolver>& slot) noexcept;
  ~SpeculationPrediction();
  SpeculationPrediction(const SpeculationPrediction&) = delete;
  SpeculationPrediction& operator=(const SpeculationPrediction&) = delete;
};
std::shared_ptr<deps::Resolver>* speculation_prediction() noexcept;

// Runs `prepare` (the caller's prepare(): headers resolved, key made) on a thread of its own while
// this thread compiles `speculation`, and returns what it returned (or throws what it threw).
// NVRTC runs on the caller's thread so that its memory comes from that thread's malloc arena, as
// for `--no-cache`: on a thread of its own it took 63 MB more (a vendored CCCL: 358 MB where
// `--no-cache` takes 247). Without a thread to be had, prepares here and compiles nothing.
PreparedProgram prepare_beside(Speculation& speculation, const std::function<PreparedProgram()>& prepare);

// The meta row that says an entry of a program with this source was stored for an arch of this
// number (store/meta_keys.hpp).
std::string source_row(const Program& program, const Arch& arch);
std::string source_row(std::string_view source, const Arch& arch);
// The meta row that says an entry of the program of this digest (program_digest(), key.hpp) was
// stored for an arch of this number.
std::string program_row(const util::Sha256& digest, const Arch& arch);
// The meta row that says entries of this program name were put in the store without program rows.
std::string unmarked_name_row(const std::string& program_name);

// The meta rows an entry of `program` (which may include) is stored with: its program row, its
// source row, and the store's "program-rows" time when it has none yet (store/meta_keys.hpp).
void add_program_rows(const Program& program, const Arch& arch, const store::Store& store,
                      std::vector<store::Store::Row>& rows);

// When a lookup of a program that may include starts a Speculation.
enum class Ahead {
  never,        // never: it is prepared first, as any lookup
  now,          // at once: no entry of the store can serve it
  if_outdated,  // an entry may serve it: it is prepared first, and compiled ahead once its manifest
                // in its resolution context is found outdated, where it would predict its headers
                // (an edited header: no entry of this context holds it; OutdatedManifestScope)
};

// When a lookup of `program` (of `digest`, program_digest()) for `arch` (resolved) may start a
// Speculation. Never where its compile can't be taken from the disk: a store it can't write, any
// `lower_tiers` (a prediction may find it there), in-memory headers or pre-includes (those take the
// private folder's way), a compile that writes a file (-time, -fdevice-time-trace, a PCH: a
// compile made twice would write twice), one that goes elsewhere (a batch's worker). Else at once
// when `store` holds no entry of that program for an arch of that number under any name (its
// program row says so; a name of entries stored before program rows were, or a source row of a
// kjit that wrote none, counts as one), and else if its manifest is outdated. A program its Cache
// already knows (`known`) asks the store nothing: it may serve itself.
Ahead may_speculate(const Program& program, const util::Sha256& digest, const Arch& arch, store::Store* store,
                    bool lower_tiers, bool known);

// Whether `store` may hold an entry of `program` for `arch`'s number that has no program row: one of
// a bundle's (its name's unmarked-name row), one created before the store's program-rows time
// (an entry of its name for the arch number), or one of its source that a kjit before program rows
// stored or a bundle brought (a source row that says "stored"). A manifest can't tell of those: a
// lookup that may be one of them is never compiled ahead. Throws what the store throws.
bool entries_without_program_rows_may_serve(const Program& program, const Arch& arch, const store::Store& store);

// What Cache::Impl::speculate() decided for a lookup.
struct AheadVerdict {
  std::optional<util::Sha256> unknown;  // the program's digest, when its Cache does not know it yet
  bool if_outdated = false;             // Ahead::if_outdated: prepare() under OutdatedManifestScope
};

// While alive, prepare() on this thread throws ManifestOutdated (cache_impl.hpp) where it finds a
// manifest of the program in its context none of whose resolutions holds, instead of predicting
// the headers: the lookup then compiles ahead, and the prediction is made beside NVRTC.
class OutdatedManifestScope {
public:
  OutdatedManifestScope() noexcept;
  ~OutdatedManifestScope();
  OutdatedManifestScope(const OutdatedManifestScope&) = delete;
  OutdatedManifestScope& operator=(const OutdatedManifestScope&) = delete;
};
bool outdated_manifest_ends_prepare() noexcept;

// While alive, this thread knows the store's manifest row `row` outdated (the lookup that compiles
// ahead found it so just before): prepare() and the closure seed read its checksum, not its text.
class OutdatedRowScope {
public:
  explicit OutdatedRowScope(const OutdatedRow& row) noexcept;
  ~OutdatedRowScope();
  OutdatedRowScope(const OutdatedRowScope&) = delete;
  OutdatedRowScope& operator=(const OutdatedRowScope&) = delete;
};
// This thread's OutdatedRowScope's row, or nullptr.
const OutdatedRow* known_outdated_row() noexcept;

// The programs (by program_digest()) a Cache has found or compiled, with the number of each arch:
// a lookup of one of them asks the store nothing to know it (a warm lookup of a program that may
// include stays as it was), and is compiled ahead only once its manifest is outdated.
class KnownPrograms {
public:
  bool contains(const util::Sha256& digest, const Arch& arch) const;
  void insert(const util::Sha256& digest, const Arch& arch);

private:
  mutable std::mutex m_mutex;
  std::set<std::pair<int, util::Sha256>> m_programs;
};

// The Speculation of this thread's lookup while one is alive, so that the compile of that lookup
// (further down the same thread) can take it.
class SpeculationScope {
public:
  explicit SpeculationScope(Speculation* speculation) noexcept;
  ~SpeculationScope();
  SpeculationScope(const SpeculationScope&) = delete;
  SpeculationScope& operator=(const SpeculationScope&) = delete;

private:
  Speculation* m_previous;
};

// This thread's Speculation when it is for `program` and `arch`, else null.
Speculation* current_speculation(const Program& program, const Arch& arch);

// Test hook: how many speculations' binaries were kept in this process.
KJIT_TEST_HOOK std::uint64_t speculations_adopted() noexcept;
// Test hook: how many speculative compiles ran in this process.
KJIT_TEST_HOOK std::uint64_t speculations_compiled() noexcept;
// Test hook: how many header blobs speculations encoded ahead in this process.
KJIT_TEST_HOOK std::uint64_t blobs_encoded_ahead() noexcept;

} // namespace kjit::cache
