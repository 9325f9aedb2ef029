// The disk tier and the compile path of a lookup: load (with quarantine), compile, persist.
#include "cache/cache_impl.hpp"

#include "cache/compile_lock.hpp"
#include "config/log.hpp"
#include "mirror/mirror.hpp"
#include "rtc/compiler.hpp"
#include "store/record.hpp"
#include "util/file.hpp"
#include "util/stopwatch.hpp"

#include <ctime>

namespace kjit {

namespace {

// The program NVRTC compiles: its in-memory headers plus the tracked disk headers, read now and
// checked against the hashes in the key, so what is compiled is exactly what was hashed.
Program program_with_disk_headers(const PreparedProgram& p)
{
  Program program = p.program();
  std::map<std::string, std::string> paths;  // include name → path
  std::set<std::string> ambiguous;           // names that mean different files in different places
  for (const IncludedHeader& header : p.included_headers()) {
    const auto [it, inserted] = paths.emplace(header.name, header.path);
    if (!inserted && it->second != header.path) {
      ambiguous.insert(header.name);
    }
  }
  for (const IncludedHeader& header : p.included_headers()) {
    std::error_code error;
    const auto content = util::read_file(header.path, error);
    if (!content || util::to_hex(util::sha256(*content)) != header.sha256) {
      throw cache::HeadersChanged{};
    }
    // An ambiguous name is left to NVRTC's own search (same files, same order).
    if (ambiguous.count(header.name) == 0) {
      program.headers.emplace(header.name, *content);
    }
  }
  return program;
}

} // namespace

std::optional<store::Entry> Cache::Impl::load(const util::Sha256& key, const PreparedProgram& prepared)
{
  if (!store) {
    return std::nullopt;
  }
  // Decoded where LMDB maps it: only the artifact section's pages are read on a hit.
  std::optional<store::Entry> entry;
  std::string damaged;
  std::string why;
  bool found = false;
  try {
    found = store->visit(store::Table::entries, bytes_of(key), [&](std::string_view bytes) {
      entry = store::decode_record(bytes, key, store::Sections::artifacts, why);
      if (!entry) {
        damaged.assign(bytes);
      }
    });
  } catch (const StoreError& e) {
    // An unreadable store is a miss: the caller is served by a compile.
    cache::warn_once(std::string("cannot read the store: ") + e.what() + "; compiling instead");
    return std::nullopt;
  }
  if (!found) {
    return std::nullopt;
  }
  if (!entry) {
    // Removed only if it still holds these bytes; the write runs isolated (see Store::quarantine).
    store->quarantine(bytes_of(key), damaged, why);
    count(&CacheStats::quarantined);
    std::lock_guard lock(flight_mutex);
    if (reported.insert(key).second) {
      log::line("warning: damaged cache entry " + prepared.key() + " (" + prepared.program().name + ", " +
                prepared.arch().str() + "): " + why + "; moved aside, recompiling");
    }
  }
  return entry;
}

store::Entry Cache::Impl::compile_entry(const PreparedProgram& p)
{
  const Program program = program_with_disk_headers(p);
  store::Entry entry;
  entry.program_name = program.name;
  entry.program_txt = p.program_txt();
  entry.options_txt = p.options_txt();
  entry.source = program.source;
  entry.headers = program.headers;
  entry.created_unix = static_cast<std::int64_t>(::time(nullptr));
  const util::Stopwatch watch;
  try {
    entry.binary = rtc::compile(config, program, p.arch());
    entry.options = program.options;
    for (auto& option : rtc::implicit_options(config, p.arch())) {
      entry.options.push_back(std::move(option));
    }
    if (config.dump_ir) {
      entry.ltoir = rtc::compile_ltoir(config, program, p.arch());
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

void Cache::Impl::persist(const util::Sha256& key, const PreparedProgram& p, const store::Entry& entry)
{
  if (!store || !store->writable()) {
    return;
  }
  // One write transaction: the record, the name index (keyed by a hash of the name, so it always
  // fits), and the manifest that leads to it.
  std::vector<store::Store::Row> rows{
    {store::Table::entries, std::string(bytes_of(key)), store::encode_record(entry, key)},
    {store::Table::names, store::names_key(p.program().name, bytes_of(key)), p.program().name},
  };
  if (auto manifest = take_unsaved_manifest(p)) {
    rows.push_back(std::move(*manifest));
  }
  try {
    store->put(rows);
  } catch (const StoreError& e) {
    // The caller still gets its binary (and the memory tier keeps it): a store that can't be
    // written costs later processes a compile, nothing more.
    count(&CacheStats::store_errors);
    cache::warn_once(std::string("cannot store compiled kernels: ") + e.what() +
                     "; they are kept in memory only");
    return;
  }
  if (config.mirror && dir.writable) {
    if (const std::error_code error = mirror::write_entry(dir.io_path, p.key(), entry)) {
      count(&CacheStats::mirror_errors);
      log::line("warning: cannot mirror " + p.key() + ": " + error.message() + " (the store is unaffected)");
    }
  }
}

cache::Result Cache::Impl::load_or_compile(const util::Sha256& key, const PreparedProgram& p)
{
  const auto result_of = [](store::Entry&& entry) {
    cache::Result result;
    if (entry.kind == store::EntryKind::failure) {
      result.failure =
        std::make_shared<const CompileError>(entry.program_name, entry.binary.arch, entry.binary.log, entry.options);
    } else {
      result.binary = std::make_shared<const Binary>(std::move(entry.binary));
    }
    return result;
  };
  const util::Stopwatch watch;
  if (auto entry = load(key, p)) {
    count(&CacheStats::disk_hits, &CacheStats::compile_ms_saved, entry->binary.timings.total_ms);
    if (entry->kind == store::EntryKind::failure) {
      count(&CacheStats::failed_hits);
    }
    verbose("hit disk", p, watch.elapsed_ms());
    if (auto manifest = take_unsaved_manifest(p); manifest && store->writable()) {
      store->put({std::move(*manifest)});
    }
    return result_of(std::move(*entry));
  }
  count(&CacheStats::misses);
  std::optional<cache::CompileLock> lock;
  if (store && store->writable()) {
    lock.emplace(store->io_path(), key, config.compile_lock_timeout_s);
  }
  if (lock) {
    // Another process may have stored the result while we asked for the lock.
    if (auto entry = load(key, p)) {
      count(&CacheStats::compiled_elsewhere);
      verbose("hit disk (compiled by another process)", p, watch.elapsed_ms());
      return result_of(std::move(*entry));
    }
    if (lock->timed_out()) {
      cache::warn_once("waited " + std::to_string(config.compile_lock_timeout_s) +
                       " s (KJIT_COMPILE_LOCK_TIMEOUT) for another process compiling the same kernel; compiling it here");
    }
  }
  store::Entry entry = compile_entry(p);
  persist(key, p, entry);
  verbose(entry.kind == store::EntryKind::binary ? "miss, compiled" : "miss, compile error", p, watch.elapsed_ms());
  return result_of(std::move(entry));
}

} // namespace kjit
