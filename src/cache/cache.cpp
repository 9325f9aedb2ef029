// Cache lookups: memory tier → LMDB → compile (single-flight across threads and processes).
#include <kjit/cache.hpp>
#include <kjit/error.hpp>

#include "cache/cache_dir.hpp"
#include "cache/compile_lock.hpp"
#include "cache/memory_tier.hpp"
#include "cache/toolchain.hpp"
#include "config/config_internal.hpp"
#include "config/log.hpp"
#include "mirror/mirror.hpp"
#include "rtc/compiler.hpp"
#include "store/record.hpp"
#include "util/stopwatch.hpp"

#include <atomic>
#include <cstring>
#include <ctime>
#include <future>
#include <map>
#include <set>
#include <unistd.h>

namespace kjit {

struct Cache::Impl {
  Config config;
  cache::CacheDir dir;
  std::shared_ptr<store::Store> store;  // null without a disk tier
  cache::MemoryTier memory;

  std::mutex context_mutex;
  std::optional<cache::KeyContext> context;

  std::mutex flight_mutex;
  std::map<util::Sha256, std::shared_future<cache::Result>> in_flight;
  std::set<util::Sha256> reported;  // quarantined keys already reported

  mutable std::mutex stats_mutex;
  CacheStats stats;

  explicit Impl(const Config& c) : config(c), memory(c.memory_limit) {}

  bool mirror_enabled() const { return store != nullptr && config.mirror && dir.writable; }

  void count(std::uint64_t CacheStats::*counter, double CacheStats::*ms = nullptr, double value = 0)
  {
    std::lock_guard lock(stats_mutex);
    ++(stats.*counter);
    if (ms != nullptr) {
      stats.*ms += value;
    }
  }

  const cache::KeyContext& key_context()
  {
    std::lock_guard lock(context_mutex);
    if (!context) {
      context = cache::toolchain_context(config, store.get());
    }
    return *context;
  }

  void verbose(const char* what, const PreparedProgram& p, double ms)
  {
    if (config.verbose) {
      char time[32];
      std::snprintf(time, sizeof time, ms < 1.0 ? "%.1f us" : "%.1f ms", ms < 1.0 ? ms * 1000.0 : ms);
      log::line(std::string(what) + " " + p.program().name + " " + p.arch().str() + " " + p.key().substr(0, 12) +
                " " + time);
    }
  }

  // The entry for `key` from LMDB, or nullopt. Damaged records are quarantined and reported once.
  std::optional<store::Entry> load(const util::Sha256& key, const PreparedProgram& prepared)
  {
    if (!store) {
      return std::nullopt;
    }
    const std::string_view key_bytes(reinterpret_cast<const char*>(key.data()), key.size());
    auto bytes = store->get(store::Table::entries, key_bytes);
    if (!bytes) {
      return std::nullopt;
    }
    std::string why;
    auto entry = store::decode_record(*bytes, why);
    if (entry && (entry->program_txt != prepared.program_txt() || entry->options_txt != prepared.options_txt())) {
      entry.reset();
      why = "key texts differ from the entry's name";
    }
    if (!entry) {
      store->quarantine(key_bytes, *bytes, why);
      count(&CacheStats::quarantined);
      std::lock_guard lock(flight_mutex);
      if (reported.insert(key).second) {
        log::line("warning: damaged cache entry " + prepared.key() + " (" + prepared.program().name +
                  ", " + prepared.arch().str() + "): " + why + "; moved aside, recompiling");
      }
    }
    return entry;
  }

  cache::Result result_of(store::Entry&& entry)
  {
    cache::Result result;
    if (entry.kind == store::EntryKind::failure) {
      result.failure = std::make_shared<const CompileError>(entry.program_name, entry.binary.arch, entry.binary.log,
                                                            entry.options);
    } else {
      result.binary = std::make_shared<const Binary>(std::move(entry.binary));
    }
    return result;
  }

  store::Entry compile_entry(const PreparedProgram& p)
  {
    store::Entry entry;
    entry.program_name = p.program().name;
    entry.program_txt = p.program_txt();
    entry.options_txt = p.options_txt();
    entry.source = p.program().source;
    entry.headers = p.program().headers;
    entry.created_unix = static_cast<std::int64_t>(::time(nullptr));
    const util::Stopwatch watch;
    try {
      entry.binary = rtc::compile(config, p.program(), p.arch());
      entry.options = p.program().options;
      for (auto& option : rtc::implicit_options(config, p.arch())) {
        entry.options.push_back(std::move(option));
      }
      if (config.dump_ir) {
        entry.ltoir = rtc::compile_ltoir(config, p.program(), p.arch());
      }
    } catch (const CompileError& e) {
      entry.kind = store::EntryKind::failure;
      entry.binary = Binary{};
      entry.binary.arch = e.arch();
      entry.binary.log = e.log();
      entry.binary.timings.total_ms = watch.elapsed_ms();
      entry.options = e.options();
    }
    count(&CacheStats::compiles, &CacheStats::compile_ms_spent, watch.elapsed_ms());
    return entry;
  }

  void persist(const util::Sha256& key, const PreparedProgram& p, const store::Entry& entry)
  {
    if (!store || !store->writable()) {
      return;
    }
    store->put(store::Table::entries,
               std::string_view(reinterpret_cast<const char*>(key.data()), key.size()), store::encode_record(entry));
    if (mirror_enabled()) {
      if (const std::error_code error = mirror::write_entry(dir.path, p.key(), entry)) {
        count(&CacheStats::mirror_errors);
        log::line("warning: cannot mirror " + p.key() + ": " + error.message() + " (the store is unaffected)");
      }
    }
  }

  // Disk tier, else compile (holding the cross-process lock for this key).
  cache::Result load_or_compile(const util::Sha256& key, const PreparedProgram& p)
  {
    const util::Stopwatch watch;
    if (auto entry = load(key, p)) {
      count(&CacheStats::disk_hits, &CacheStats::compile_ms_saved, entry->binary.timings.total_ms);
      if (entry->kind == store::EntryKind::failure) {
        count(&CacheStats::failed_hits);
      }
      verbose("hit disk", p, watch.elapsed_ms());
      return result_of(std::move(*entry));
    }
    count(&CacheStats::misses);
    const cache::CompileLock lock = store && store->writable() ? cache::CompileLock(store->path(), key)
                                                               : cache::CompileLock();
    if (lock.held()) {
      // Another process may have compiled it while we waited for the lock.
      if (auto entry = load(key, p)) {
        verbose("hit disk (compiled by another process)", p, watch.elapsed_ms());
        return result_of(std::move(*entry));
      }
    }
    store::Entry entry = compile_entry(p);
    persist(key, p, entry);
    verbose(entry.kind == store::EntryKind::binary ? "miss, compiled" : "miss, compile error", p, watch.elapsed_ms());
    return result_of(std::move(entry));
  }
};

std::string PreparedProgram::key() const
{
  return util::to_hex(m_digest, sizeof m_digest);
}

Cache::Cache() : Cache(current_config()) {}

Cache::Cache(const Config& config) : m_impl(std::make_unique<Impl>(config))
{
  if (config.disable_cache) {
    return;
  }
  m_impl->dir = cache::open_cache_dir(config);
  m_impl->store = store::Store::open(m_impl->dir.store_dir, config.store_map_size);
}

Cache::~Cache() = default;

PreparedProgram Cache::prepare(const Program& program, const Arch& arch)
{
  PreparedProgram prepared;
  prepared.m_program = program;
  prepared.m_arch = rtc::resolve_arch(arch.is_auto() ? Arch::parse(m_impl->config.arch) : arch);
  cache::KeyTexts texts = cache::make_key(program, prepared.m_arch, m_impl->key_context());
  prepared.m_program_txt = std::move(texts.program_txt);
  prepared.m_options_txt = std::move(texts.options_txt);
  std::memcpy(prepared.m_digest, texts.digest.data(), sizeof prepared.m_digest);
  return prepared;
}

std::shared_ptr<const Binary> Cache::get(const Program& program, const Arch& arch)
{
  return get(prepare(program, arch));
}

std::shared_ptr<const Binary> Cache::get(const PreparedProgram& prepared)
{
  Impl& impl = *m_impl;
  util::Sha256 key;
  std::memcpy(key.data(), prepared.m_digest, key.size());
  const auto unwrap = [](const cache::Result& result) {
    if (result.failure) {
      throw CompileError(*result.failure);
    }
    return result.binary;
  };

  if (auto found = impl.memory.find(key)) {
    const double saved = found->binary ? found->binary->timings.total_ms : 0.0;
    impl.count(&CacheStats::memory_hits, &CacheStats::compile_ms_saved, saved);
    if (found->failure) {
      impl.count(&CacheStats::failed_hits);
    }
    if (impl.config.verbose) {
      impl.verbose("hit memory", prepared, 0.0);
    }
    return unwrap(*found);
  }

  std::promise<cache::Result> promise;
  std::shared_future<cache::Result> future;
  {
    std::lock_guard lock(impl.flight_mutex);
    const auto it = impl.in_flight.find(key);
    if (it != impl.in_flight.end()) {
      future = it->second;
    } else {
      impl.in_flight.emplace(key, promise.get_future().share());
    }
  }
  if (future.valid()) {  // another thread is on it
    return unwrap(future.get());
  }
  cache::Result result;
  try {
    result = impl.load_or_compile(key, prepared);
    impl.memory.insert(key, result);
    promise.set_value(result);
  } catch (...) {
    promise.set_exception(std::current_exception());
    std::lock_guard lock(impl.flight_mutex);
    impl.in_flight.erase(key);
    throw;
  }
  {
    std::lock_guard lock(impl.flight_mutex);
    impl.in_flight.erase(key);
  }
  return unwrap(result);
}

CacheStats Cache::stats() const
{
  std::lock_guard lock(m_impl->stats_mutex);
  return m_impl->stats;
}

void Cache::clear()
{
  m_impl->memory.clear();
  if (m_impl->store) {
    m_impl->store->clear(store::Table::entries);
    m_impl->store->clear(store::Table::quarantine);
    if (m_impl->dir.writable) {
      cache::remove_tree(m_impl->dir.path, "programs");
    }
  }
  std::lock_guard lock(m_impl->stats_mutex);
  m_impl->stats = CacheStats{};
}

std::size_t Cache::rebuild_mirror()
{
  if (!m_impl->store || !m_impl->dir.writable) {
    return 0;
  }
  std::size_t written = 0;
  m_impl->store->for_each(store::Table::entries, [&](std::string_view key, std::string_view bytes) {
    std::string why;
    auto entry = store::decode_record(bytes, why);
    if (!entry || key.size() != 32) {
      return;  // damaged: quarantined when next looked up, never mirrored
    }
    const std::string hex = util::to_hex(reinterpret_cast<const std::uint8_t*>(key.data()), key.size());
    if (!mirror::write_entry(m_impl->dir.path, hex, *entry)) {
      ++written;
    }
  });
  return written;
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

bool Cache::writable() const noexcept
{
  return m_impl->store != nullptr && m_impl->store->writable();
}

std::string Cache::store_path() const
{
  return m_impl->store ? m_impl->store->path() : std::string();
}

// Rebuilding replaces the object: callers must not keep the reference across kjit::option calls.
Cache& default_cache()
{
  static std::mutex mutex;
  static std::unique_ptr<Cache> cache;
  static std::uint64_t generation = 0;
  static pid_t pid = 0;
  std::lock_guard lock(mutex);
  const std::uint64_t now = config_generation();
  if (!cache || generation != now || pid != ::getpid()) {
    cache = std::make_unique<Cache>(current_config());
    generation = now;
    pid = ::getpid();
  }
  return *cache;
}

std::shared_ptr<const Binary> get(const Program& program, const Arch& arch)
{
  return default_cache().get(program, arch);
}

void clear_cache()
{
  default_cache().clear();
}

} // namespace kjit
