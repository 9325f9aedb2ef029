// Cache lookups: memory tier → LMDB → compile (single-flight across threads and processes).
#include "cache/cache_impl.hpp"

#include "cache/direct_index.hpp"
#include "cache/toolchain.hpp"
#include "config/config_internal.hpp"
#include "config/log.hpp"
#include "deps/resolver.hpp"
#include "deps/search.hpp"
#include "mirror/mirror.hpp"
#include "mirror/script_mirror.hpp"
#include "rtc/compiler.hpp"
#include "rtc/nvrtc_library.hpp"
#include "rtc/option_spelling.hpp"
#include "store/blobs.hpp"
#include "store/meta_keys.hpp"
#include "store/record.hpp"
#include "util/no_cancellation.hpp"
#include "util/stopwatch.hpp"

#include <cerrno>
#include <cxxabi.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <cstring>
#include <set>
#include <thread>
#include <unistd.h>

namespace kjit {

CacheStats Cache::Impl::stats_now() const
{
  CacheStats now = statistics.snapshot([this](CacheStats& counted) {
    const cache::MemoryTier::Hits tier = memory.hits();  // the memory tier's hits
    counted.memory_hits += tier.hits;
    counted.failed_hits += tier.failed;
    counted.compile_ms_saved += tier.ms_saved;
  });
  now.remote_bytes_written = remote != nullptr ? remote->bytes_written() : 0;
  return now;
}

void Cache::Impl::keep(const util::Sha256& entry_key, const cache::Result& result, Source source)
{
  if (source == Source::disk) {
    memory.admit(entry_key, result);  // kept from its second disk hit on (memory_tier.hpp)
  } else {
    memory.insert(entry_key, result);  // a compile's (or a lower tier's) result is used again
  }
}

void Cache::Impl::verbose(const char* what, const PreparedProgram& p, double ms)
{
  const util::Sha256 prepared_key = p.m_key;
  verbose(what, p.program().name, p.arch(), &prepared_key, ms);
}

void Cache::Impl::verbose(const char* what, const std::string& name, const Arch& arch, const util::Sha256& key,
                          double ms)
{
  verbose(what, name, arch, &key, ms);
}

void Cache::Impl::verbose(const char* what, const std::string& name, const Arch& arch, const util::Sha256* key,
                          double ms)
{
  if (config.verbose) {
    char time[32];
    std::snprintf(time, sizeof time, ms < 1.0 ? "%.1f us" : "%.1f ms", ms < 1.0 ? ms * 1000.0 : ms);
    log::line(std::string(what) + " " + name + " " + arch.str() + (key ? " " + util::to_hex(*key).substr(0, 12) : "") +
              " " + time);
  }
}

std::string PreparedProgram::key() const
{
  return util::to_hex(m_key.data(), m_key.size());
}

Cache::Cache() : Cache(current_config()) {}

Cache::Cache(const Config& config) : m_impl(std::make_unique<Impl>(config))
{
  check_config(config);  // a Config built by hand skipped the table's parsers
  if (!config.disable_cache) {
    if (config.cache_dir.empty()) {
      // Config{} is not current_config(): its folder is empty rather than the default one.
      throw ConfigError("cache_dir", "Config::cache_dir is empty: set it, or start from kjit::current_config() "
                                     "(whose cache_dir is KJIT_CACHE_DIR or the default folder)");
    }
    m_impl->dir = cache::open_cache_dir(config);
    // An empty store_dir: no safe place for the store (open_cache_dir warned): memory only.
    if (!m_impl->dir.store_dir.empty()) {
      try {
        const store::Access access = config.shared_cache ? store::Access::group : store::Access::owner;
        m_impl->store = store::Store::open(m_impl->dir.store_dir, {config.store_map_size, access, m_impl->dir.store_fd->get(), config.inspect_only});
      } catch (const StoreError& e) {
        m_impl->statistics.set_store_problem(e.what());
        cache::warn_once(std::string(e.what()) + "; running without a disk cache (kernels are kept in memory only)");
      }
    } else {
      m_impl->statistics.set_store_problem(m_impl->dir.store_problem);
    }
  }
  m_impl->open_tiers();
  m_impl->open_mirror();
}

// The destructor writes the usage log and the last uses, closes the store and joins threads: all
// cancellation points, and a pthread_cancel() acting in one would unwind through a noexcept
// destructor (std::terminate). A pending cancellation acts at the thread's next point after it.
Cache::~Cache()
{
  const util::NoCancellation hold;
  m_impl.reset();
}

namespace {

// Loads NVRTC on another thread while this one resolves the headers of a program a compile will
// follow (no manifest holds for it): a process's first miss then does not wait for the load
// (15-95 ms measured) after its headers. Joined before prepare() returns.
class CompilerPreload {
public:
  explicit CompilerPreload(const Config& config)
  {
    if (rtc::nvrtc_is_loaded()) {
      return;
    }
    try {
      m_thread = std::thread([config] {
        try {
          rtc::nvrtc_for(config);
        } catch (const std::exception&) {
          // The compile loads it again and reports what fails.
        }
      });
    } catch (const std::system_error&) {
      // No thread now: the compile loads it.
    }
  }
  CompilerPreload(const CompilerPreload&) = delete;
  CompilerPreload& operator=(const CompilerPreload&) = delete;
  ~CompilerPreload()
  {
    if (m_thread.joinable()) {
      m_thread.join();
    }
  }

private:
  std::thread m_thread;
};

} // namespace

PreparedProgram Cache::prepare(const Program& given, const Arch& arch)
{
  const Impl::ToolchainRowsAtEnd rows_at_end(*m_impl);
  std::optional<Program> storage;
  const Program& program = rtc::as_nvrtc_reads(given, storage);  // keyed and resolved as NVRTC reads it
  PreparedProgram prepared;
  prepared.m_program = program;
  prepared.m_arch = rtc::resolve_arch(arch.is_auto() ? Arch::parse(m_impl->config.arch) : arch);
  const cache::KeyContext& context = m_impl->key_context();
  // Bad -I/-D/pre-include options and NUL bytes fail here, before anything is looked up.
  // A speculating miss's preparing thread predicted first: in the context (working folder) of then.
  std::shared_ptr<deps::Resolver>* own = cache::speculation_prediction();
  if (own && *own && (*own)->context().toolkit_dirs != context.toolkit_include_dirs) {
    own->reset();
  }
  const deps::SearchContext search =
    own && *own ? (*own)->context() : deps::search_context(program, context.toolkit_include_dirs);
  const std::string search_text = search.text();
  cache::KeyTexts texts = cache::make_key_texts(program, prepared.m_arch, context);
  util::Sha256 prepared_key{};  // texts.entry_key, or a provisional key
  // The manifest's key: the program and the resolution context it is resolved in.
  const util::Sha256 manifest_key =
    util::Sha256Hasher().update(texts.program_txt).update(texts.options_txt).update(search_text).finish();
  prepared.m_manifest_key = manifest_key;
  // Without the word "include" anywhere (#include, %:include, __has_include) and no pre-include,
  // there is nothing to resolve: no manifest to read.
  const bool may_include = !search.pre_includes.empty() || cache::mentions_include(program);
  // A program whose source or in-memory header uses the time (__TIME__…) gets a provisional key
  // too, never looked up: it is compiled each time and never stored (Resolver::unfaithful()).
  if (may_include || deps::program_uses_time(program)) {
    bool outdated = false;
    util::Checksum outdated_row{};
    if (auto found = m_impl->valid_manifest(manifest_key, search_text, &outdated, &outdated_row)) {
      if (own) {
        own->reset();  // compiled from the manifest's headers, not from a prediction made before
      }
      texts = cache::make_key_texts(program, prepared.m_arch, context, found->headers);
      for (const deps::DiskHeader& header : found->headers) {
        prepared.m_includes.push_back({header.name, header.path, util::to_hex(header.hash)});
      }
    } else if (outdated && cache::outdated_manifest_ends_prepare() && !m_impl->entry_without_rows_may_serve(program, prepared.m_arch)) {
      // get_program() compiles ahead, predicting beside NVRTC (which need not read the row again).
      throw cache::ManifestOutdated{{manifest_key, outdated_row}};  // a row of zeros: none (no checksum is)
    } else {
      // No manifest holds: predict the headers (shown by included_headers()), but the key is
      // provisional: never looked up, only a compile tells which headers NVRTC reads.
      const CompilerPreload preload(m_impl->config);
      auto resolver = own && *own ? std::move(*own) : m_impl->predicted_resolver(program, search);
      texts = cache::make_key_texts(program, prepared.m_arch, context, resolver->result().headers);
      for (const deps::DiskHeader& header : resolver->result().headers) {
        prepared.m_includes.push_back({header.name, header.path, util::to_hex(header.hash)});
      }
      prepared_key = util::Sha256Hasher().update("kjit provisional key\n").update(texts.program_txt).update(texts.options_txt).finish();
      prepared.m_provisional = true;
      std::lock_guard lock(m_impl->manifests.mutex);
      m_impl->manifests.provisional.insert(prepared_key);
      m_impl->manifests.any_provisional.store(true, std::memory_order_release);
      if (own) {
        *own = std::move(resolver);  // a speculation's: no other lookup of this Cache may use it meanwhile
      } else {
        m_impl->manifests.predictions[prepared_key] = std::move(resolver);
      }
      while (m_impl->manifests.predictions.size() > 8) {
        m_impl->manifests.predictions.erase(m_impl->manifests.predictions.begin());
      }
    }
  }
  // Its key holds what the disk held now, or (-lineinfo, -G: the named-from line) the working
  // directory now: get_prepared() prepares it again, for the files and folder of that moment. Kept
  // in the prepared program, not in this Cache: another Cache served its key as it was.
  prepared.m_from_disk =
    may_include || deps::program_uses_time(program) || deps::options_name_files(program.options);
  prepared.m_made.value = true;
  prepared.m_program_txt = std::move(texts.program_txt);
  prepared.m_options_txt = std::move(texts.options_txt);
  prepared.m_key = prepared.m_provisional ? prepared_key : texts.entry_key;
  return prepared;
}

std::shared_ptr<const Binary> Cache::get(const Program& program, const Arch& arch)
{
  Source source{};
  return get_program(program, arch, source);
}

std::shared_ptr<const Binary> Cache::get(const PreparedProgram& prepared)
{
  Source source{};
  return get_prepared(prepared, source);
}

Lookup Cache::lookup(const Program& program, const Arch& arch)
{
  const util::Stopwatch watch;
  Lookup result;
  result.binary = get_program(program, arch, result.source, &result.key);
  result.lookup_ms = watch.elapsed_ms();
  return result;
}

Lookup Cache::lookup(const PreparedProgram& prepared)
{
  const util::Stopwatch watch;
  Lookup result;
  result.binary = get_prepared(prepared, result.source, &result.key);
  result.lookup_ms = watch.elapsed_ms();
  return result;
}

std::shared_ptr<const Binary> Cache::get_program(const Program& given, const Arch& arch, Source& source,
                                                std::string* key)
{
  const Impl::ToolchainRowsAtEnd rows_at_end(*m_impl);
  std::optional<Program> storage;
  const Program& program = rtc::as_nvrtc_reads(given, storage);  // found by the options NVRTC reads
  std::optional<Impl::Direct> direct;
  // -lineinfo and -G name the working directory in the binary, which the raw inputs leave out:
  // such a program is found by its key (which holds it, key.cpp), never directly.
  if (cache::direct_options(program) && !deps::options_name_files(program.options)) {
    direct = m_impl->direct_lookup(program, arch, source);  // no key texts, no SHA-256 (direct_lookup.cpp)
    if (direct->hit) {
      if (direct->hit->failure) {
        throw CompileError(*direct->hit->failure);
      }
      return direct->hit->binary;
    }
    if (!cache::direct_eligible(program)) {
      direct.reset();  // it may name a disk header: never found by its raw inputs
    }
  }
  // A program this store never held is compiled from the disk at once, while another thread
  // resolves its headers and makes its key (speculation.hpp); the compile below takes it.
  // One that an entry may serve is prepared first; if its manifest turns out outdated (a header
  // edited since: no entry of its context holds it), it is compiled ahead from there.
  std::optional<cache::Speculation> speculation;
  const cache::AheadVerdict verdict = m_impl->speculate(program, arch, speculation);
  cache::OutdatedRow outdated_row;  // the store's manifest row that prepare() found outdated
  try {
    std::optional<PreparedProgram> first;
    if (!speculation) {
      try {
        std::optional<cache::OutdatedManifestScope> outdated;
        if (verdict.if_outdated) {
          outdated.emplace();
        }
        first = prepare(program, arch);
      } catch (const cache::ManifestOutdated& outdated) {
        outdated_row = outdated.row;
        m_impl->speculate_now(program, arch, speculation);
      }
    }
    const cache::SpeculationScope scope(speculation ? &*speculation : nullptr);
    const PreparedProgram prepared = first ? std::move(*first) : !speculation ? prepare(program, arch) : cache::prepare_beside(*speculation, [&] {
      const Impl::ToolchainRowsOnBehalf on_behalf;
      const cache::OutdatedRowScope known_outdated(outdated_row);
      // The prediction first, closed, its blobs encoded: none of it needs the key context (on a
      // new store it waits for this compile's PTX to name NVRTC's build: rtc::CompileAhead).
      std::shared_ptr<deps::Resolver> own = m_impl->prediction_ahead(program);
      std::set<util::Sha256> stored;  // blobs the store holds intact: not encoded again
      std::map<util::Sha256, std::string> blobs = m_impl->prepare_ahead(*own, stored);
      if (own->unfaithful().empty()) {
        // What a compile that takes NVRTC's binary reads of them is their blobs; any other use reads
        // them again (deps::Resolver::restore_texts()). No tier below the store is sent the entry
        // with its headers inline: a Cache with tiers does not speculate (may_speculate()). Before
        // prepare(), which reads none of them: on a new store it waits for this compile's PTX (the
        // key context), near NVRTC's peak.
        own->shed_texts([&](const util::Sha256& hash) { return blobs.count(hash) != 0 || stored.count(hash) != 0; });
        deps::after_shed();
      }
      const cache::SpeculationPrediction keep(own);  // prepare() takes it (drops it for a manifest's headers)
      PreparedProgram ahead = prepare(program, arch);
      if (own) {
        // Predicted (not a manifest's headers): the manifest its commit stores is encoded and
        // packed here, beside NVRTC, for when the compile records this same resolution.
        speculation->keep_packed_manifest(m_impl->manifest_ahead(ahead.program(), ahead.m_manifest_key, *own));
#if defined(__GLIBC__)
        // What its encoding freed (a vendored CCCL's: ≈ 6 MB in the middle of a heap that NVRTC
        // grows on top of) goes back to the system now: glibc keeps such pages, and they stayed
        // in the miss's peak (+3 MB; with this, 2–3 MB under the peak before manifests were
        // packed ahead). It takes 2–3 ms here, holding the arena NVRTC allocates from.
        ::malloc_trim(0);
#endif
      }
      speculation->keep_encoded_blobs(std::move(blobs));
      speculation->keep_prediction(std::move(own));
      return ahead;
    });
    auto binary = get_keyed(prepared, source, key);  // just prepared: no need to validate it again
    if (verdict.unknown) {
      m_impl->known_programs.insert(*verdict.unknown, prepared.arch());  // a warm lookup of a known one adds nothing
    }
    if (direct && !prepared.m_provisional) {
      // Found by the SHA-256 path (stored without a direct row): found directly from now on.
      m_impl->direct_index.insert(direct->input_digest, std::move(direct->inputs), prepared.m_key);
    }
    return binary;
  } catch (const cache::HeadersChanged&) {
  }
  return get_prepared_again(program, arch, source, key);
}

std::shared_ptr<const Binary> Cache::get_prepared_again(const Program& program, const Arch& arch, Source& source,
                                                        std::string* key)
{
  // A tracked header changed since prepare(): resolve again (a few tries if it keeps changing).
  for (int attempt = 0; attempt < 3; ++attempt) {
    try {
      return get_keyed(prepare(program, arch), source, key);
    } catch (const cache::HeadersChanged&) {
    }
  }
  throw Error("the headers of " + program.name + " keep changing while it is compiled");
}

std::shared_ptr<const Binary> Cache::get_prepared(const PreparedProgram& prepared, Source& source, std::string* key)
{
  const Impl::ToolchainRowsAtEnd rows_at_end(*m_impl);
  if (!prepared.m_made.value) {
    // Its key would be looked up, and on a miss its program compiled and stored under that key:
    // 000…0 for a default-constructed one, another program's for one moved from.
    throw Error("this PreparedProgram was not made by Cache::prepare() (default-constructed, or moved from): "
                "prepare the program, or look the Program itself up");
  }
  try {
    if (prepared.m_from_disk || m_impl->is_provisional(prepared.m_key)) {
      // Prepared before a manifest was known (one made since may now validate it), or from disk
      // headers, which may have been edited since: what is served is for the files on disk now.
      return get_keyed(prepare(prepared.program(), prepared.arch()), source, key);
    }
    return get_keyed(prepared, source, key);
  } catch (const cache::HeadersChanged&) {
  }
  return get_prepared_again(prepared.program(), prepared.arch(), source, key);
}

std::shared_ptr<const Binary> Cache::get_keyed(const PreparedProgram& prepared, Source& source, std::string* key)
{
  auto binary = get_once(prepared, source, key);
  if (key != nullptr && !prepared.m_provisional && source != Source::compiled && source != Source::compiled_elsewhere) {
    *key = prepared.key();  // a hit's key is final; a compile's is what NVRTC read decides (get_once's)
  }
  return binary;
}

std::shared_ptr<const Binary> Cache::get_once(const PreparedProgram& prepared, Source& source, std::string* stored_key)
{
  source = Source::memory;
  Impl& impl = *m_impl;
  const util::Sha256 prepared_key = prepared.m_key;
  const auto unwrap = [](const cache::Result& result) {
    if (result.failure) {
      throw CompileError(*result.failure);
    }
    return result.binary;
  };

  const bool provisional = impl.is_provisional(prepared_key);
  if (auto found = provisional ? std::nullopt : impl.memory.find_hit(prepared_key, impl.store != nullptr)) {
    if (impl.config.verbose) {
      impl.verbose("hit memory", prepared, 0.0);
    }
    if (found->failure) {
      throw CompileError(*found->failure);
    }
    return std::move(found->binary);  // moved out: no second reference count
  }

  std::promise<cache::Result> promise;
  const std::shared_future<cache::Result> future = impl.in_flight.join(prepared_key, promise);
  if (future.valid()) {  // another thread is on it: its result, shared, counted as a memory hit
    const cache::Result shared = future.get();
    if (!shared.binary && !shared.failure) {
      return get_once(prepared, source, stored_key);  // its thread was cancelled before it had one: look again
    }
    impl.statistics.count(&CacheStats::memory_hits, &CacheStats::compile_ms_saved,
               shared.binary ? shared.binary->timings.total_ms : 0.0);
    if (shared.failure) {
      impl.statistics.count(&CacheStats::failed_hits);
    }
    return unwrap(shared);
  }
  cache::Result result;
  try {
    bool keepable = true;
    result = impl.load_or_compile(prepared_key, prepared, source, keepable);
    if (stored_key != nullptr && result.stored_key) {
      *stored_key = util::to_hex(*result.stored_key);  // a compile's key, known now (not prepare()'s)
    }
    // Not a compile kjit does not cache (a file NVRTC or ptxas reads that no key holds): kept in
    // memory, it would be served to the next lookup after that file changed.
    if (!provisional && keepable) {
      impl.keep(prepared_key, result, source);
    }
    promise.set_value(result);
  } catch (abi::__forced_unwind&) {
    // pthread_cancel() acted in a wait (another node's lease, a lock): no result, and no
    // exception to give (current_exception() is empty here). The waiters look it up themselves
    // (out of the flight first: they find a new one or start it).
    impl.in_flight.end(prepared_key);
    promise.set_value(cache::Result{});
    throw;
  } catch (...) {
    promise.set_exception(std::current_exception());
    impl.in_flight.end(prepared_key);
    throw;
  }
  impl.in_flight.end(prepared_key);
  return unwrap(result);
}

std::vector<int> Cache::supported_archs()
{
  const Impl::ToolchainRowsAtEnd rows_at_end(*m_impl);
  return m_impl->key_context().supported_archs;
}

CacheStats Cache::stats() const
{
  m_impl->commits.wait();  // the reports of commits still under way (store_errors)
  CacheStats stats = m_impl->stats_now();
  stats.stores_replaced = m_impl->store ? m_impl->store->replacements() : 0;
  return stats;
}

void Cache::clear()
{
  if (m_impl->store && !m_impl->store->writable()) {
    throw StoreError("the store " + m_impl->store->path() + " is read-only: nothing was cleared", EROFS);
  }
  m_impl->memory.clear();
  {
    std::lock_guard lock(m_impl->manifests.mutex);
    m_impl->manifests.known.clear();
    m_impl->manifests.unsaved.clear();
    m_impl->manifests.provisional.clear();
    m_impl->manifests.predictions.clear();
  }
  m_impl->direct_index.clear();
  if (m_impl->store) {
    for (const store::Table table :
         {store::Table::entries, store::Table::quarantine, store::Table::manifests, store::Table::names,
          store::Table::direct}) {
      m_impl->store->clear(table);
    }
    std::vector<std::string> uses;  // the last uses of the entries (src/cache/size_limit.cpp)
    m_impl->store->for_each_prefix(store::Table::meta, cache::used_row(""),
                                   [&](std::string_view key, std::string_view) { uses.emplace_back(key); });
    uses.emplace_back(store::k_size_count);  // the store's count for KJIT_MAX_SIZE: counted again
    m_impl->store->erase(store::Table::meta, uses);
    {
      std::lock_guard lock(m_impl->size.mutex);
      m_impl->size.counted = false;
    }
    if (m_impl->mirror_writer) {
      m_impl->mirror_writer->discard();
    }
    if (m_impl->dir.writable) {
      mirror::remove_tree(m_impl->dir.path, "programs");
    }
    script::forget_all(*m_impl->store, m_impl->dir.path);  // script records and scripts/ (src/script)
  }
  m_impl->statistics.reset([this] { m_impl->memory.reset_hits(); });
}

bool Cache::check_store(std::string& report)
{
  if (!m_impl->store) {
    report = "no store (memory only)";
    return true;
  }
  const store::CheckReport check = m_impl->store->check(true);
  char ms[32];
  std::snprintf(ms, sizeof ms, "%.1f ms", check.ms);
  report = m_impl->store->path() + ": " + check.detail + " in " + ms +
           (check.ok || check.not_checked ? std::string()
            : m_impl->config.inspect_only ? std::string("; left as it is (kjit verify --repair replaces it)")
                                          : std::string("; moved aside and replaced by a fresh store"));
  return check.ok;
}

std::size_t Cache::disk_entries() const
{
  return m_impl->store ? m_impl->store->count(store::Table::entries) : 0;
}

const Config& Cache::config() const noexcept
{
  return m_impl->config;
}

bool Cache::has_disk_tier() const noexcept
{
  return m_impl->store != nullptr;
}

bool Cache::store_exists() const noexcept
{
  return !m_impl->dir.store_absent;
}

bool Cache::writable() const noexcept
{
  return m_impl->store != nullptr && m_impl->store->writable();
}

std::string Cache::store_problem() const
{
  m_impl->commits.wait();  // the reports of commits still under way
  if (std::string problem = m_impl->statistics.store_problem(); !problem.empty() || m_impl->config.disable_cache) {
    return problem;
  }
  if (m_impl->store == nullptr) {
    return "no disk store";
  }
  return m_impl->store->writable() ? std::string() : "the store " + m_impl->store->path() + " is read-only";
}

std::string Cache::store_path() const
{
  return m_impl->store ? m_impl->store->path() : std::string();
}

} // namespace kjit
