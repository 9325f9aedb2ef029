// The disk tier and the compile path of a lookup: load (with quarantine), compile, persist.
#include "cache/cache_impl.hpp"

#include "cache/compile_lock.hpp"
#include "cache/include_compile.hpp"
#include "deps/resolver.hpp"
#include "deps/search.hpp"
#include "config/log.hpp"
#include "rtc/compiler.hpp"
#include "rtc/nvrtc_library.hpp"
#include "store/blobs.hpp"
#include "store/record.hpp"
#include "util/file.hpp"
#include "util/stopwatch.hpp"

#include <cstring>
#include <ctime>

namespace kjit {

std::optional<store::Entry> Cache::Impl::load(const util::Sha256& entry_key, const std::string& name, const Arch& arch)
{
  util::Sha256 found_key = entry_key;
  return load_entry(found_key, name, arch, nullptr);
}

std::optional<store::Entry> Cache::Impl::load_entry(util::Sha256& entry_key, const std::string& name, const Arch& arch,
                                                    Direct* via)
{
  if (!store) {
    return std::nullopt;
  }
  // Decoded where LMDB maps it: only the artifact section's pages are read on a hit.
  std::optional<store::Entry> entry;
  std::string damaged;
  std::string why;
  bool found = false;
  const auto decode = [&](std::string_view bytes) {
    // The cubin's header only: the store took it checked in full, the checksum proves it unchanged.
    entry = store::decode_record(bytes, entry_key, store::Sections::artifacts, why, store::CubinCheck::header);
    if (!entry) {
      damaged.assign(bytes);
    }
  };
  bool other_inputs = false;
  try {
    if (via != nullptr) {
      // The direct row and the record it names, in one read transaction. The row is only a lead:
      // the record's own copy of the raw inputs must be exactly these (not a collision of their
      // XXH3-128, not a row of another program), else the lookup takes the SHA-256 path.
      const auto follow = [&](std::string_view row) -> std::optional<std::string_view> {
        const auto named = cache::direct_row_entry_key(row, via->inputs.size());
        if (!named) {
          return std::nullopt;
        }
        entry_key = *named;
        return bytes_of(entry_key);  // a view of `entry_key`, which outlives the call
      };
      const auto check_and_decode = [&](std::string_view bytes) {
        if (store::input_field(bytes, store::InputField::direct_inputs) != std::string_view(via->inputs)) {
          other_inputs = true;  // another program's record (or one too damaged to say): never served
        } else if (!(via->in_memory = memory.find(entry_key))) {  // no need to decode what memory holds
          decode(bytes);
        }
      };
      found = store->visit_chained(store::Table::direct, cache::input_digest_bytes(via->input_digest), follow,
                                   store::Table::entries, check_and_decode);
      found = found && !other_inputs && !via->in_memory;
    } else {
      found = store->visit(store::Table::entries, bytes_of(entry_key), decode);
    }
  } catch (const StoreError& e) {
    if (creator != ::getpid()) {
      throw;  // the parent's store in a fork()ed child: refused (docs/cache-format.md)
    }
    // An unreadable store is a miss: the caller is served by a compile.
    cache::warn_once(std::string("cannot read the store: ") + e.what() + "; compiling instead");
    return std::nullopt;
  }
  if (!found) {
    return std::nullopt;
  }
  if (entry) {
    note_use(entry_key);  // written in a batch (size_limit.cpp), never here
  }
  if (!entry) {
    // Removed only if it still holds these bytes; the write runs isolated (see Store::quarantine).
    store->quarantine(bytes_of(entry_key), damaged, why);
    statistics.count(&CacheStats::quarantined);
    if (reported.first(entry_key)) {
      log::line("warning: damaged cache entry " + util::to_hex(entry_key) + " (" + name + ", " + arch.str() + "): " + why +
                "; moved aside, recompiling");
    }
  }
  return entry;
}

store::Entry Cache::Impl::compile_entry(const PreparedProgram& p, util::Sha256& compiled_entry_key, bool& cacheable,
                                        std::shared_ptr<deps::Resolver>& compiled_with)
{
  const Program& program = p.program();
  const cache::KeyContext& context = key_context();
  const deps::SearchContext search = deps::search_context(program, context.toolkit_include_dirs);
  // A speculation's prediction (its preparing thread's, closed there), taken once.
  cache::Speculation* speculation = cache::current_speculation(program, p.arch());
  std::shared_ptr<deps::Resolver> taken = speculation != nullptr ? speculation->take_prediction() : nullptr;
  if (!taken) {
    const util::Sha256 prepared_key = p.m_key;
    std::lock_guard lock(manifests.mutex);
    if (const auto it = manifests.predictions.find(prepared_key); it != manifests.predictions.end()) {
      taken = std::move(it->second);  // the prediction of prepare(): headers read and hashed once
      manifests.predictions.erase(it);
    }
  }
  if (taken && !taken->check_unchanged()) {
    throw cache::HeadersChanged{};  // edited since prepare(): prepare again, compile what is there now
  }
  if (!taken) {
    taken = std::make_shared<deps::Resolver>(program, search);
    // The headers the key was made from, read now: a changed one means the key is stale.
    for (const IncludedHeader& header : p.included_headers()) {
      if (!taken->add(header.name, header.path) || util::to_hex(taken->find(header.path)->hash) != header.sha256) {
        throw cache::HeadersChanged{};
      }
    }
    taken->predict();
  }
  deps::Resolver& resolver = *taken;
  store::Entry entry;
  entry.program_name = program.name;
  entry.source = program.source;
  entry.created_unix = static_cast<std::int64_t>(::time(nullptr));
  const util::Stopwatch watch;
  bool compiled = false;
  try {
    if (auto reused = ptx_of_real_arch(program, p.arch(), resolver)) {
      entry.binary = std::move(*reused);
    } else {
      compiled = true;
      if (resolver.unfaithful().empty() && speculation == nullptr) {
        mirror_headers_early(resolver.result());  // stored with the entry if it compiles (prepare_ahead() did)
      }
      entry.binary = cache::compile_with_includes(config, program, p.arch(), resolver, nullptr,
                                                  cache::current_speculation(program, p.arch()));
    }
    entry.options = cache::absolute_include_options(program.options);  // compile.sh names the folders used
    for (auto& option : rtc::implicit_options(config, p.arch())) {
      entry.options.push_back(std::move(option));
    }
    if (config.dump_ir) {
      if (!resolver.restore_texts()) {
        throw cache::HeadersChanged{};
      }
      Program with_headers = program;
      for (const deps::DiskHeader& header : resolver.result().headers) {
        with_headers.headers.emplace(header.name, header.content);
      }
      entry.ltoir = rtc::compile_ltoir(config, with_headers, p.arch());
    }
  } catch (const CompileError& e) {
    entry.kind = store::EntryKind::failure;
    entry.binary = Binary{};
    entry.binary.arch = e.arch();
    entry.binary.log = e.log();
    entry.binary.timings.total_ms = watch.elapsed_ms();
    entry.options = e.options();
  }
  if (compiled) {
    // NVRTC runs: a speculation's (before this call: its own time), and this call's unless it
    // took the speculation's binary (a refused one costs a second run).
    const bool ahead = speculation != nullptr && speculation->compiled();
    if (ahead) {
      statistics.count(&CacheStats::compiles, &CacheStats::compile_ms_spent, speculation->compile_ms());
    }
    if (!ahead || !speculation->taken()) {
      statistics.count(&CacheStats::compiles, &CacheStats::compile_ms_spent, watch.elapsed_ms());
    }
  }
  // The key of what was compiled: the program and every user header NVRTC could read.
  const deps::Resolution& resolution = resolver.result();
  // Compiled from the files on disk (see compile_with_includes): its key doesn't name what NVRTC
  // read, so storing it would serve it later for other files.
  cacheable = resolver.unfaithful().empty();
  if (compiled && !cacheable) {
    statistics.count(cache::uncached_counter(resolver.unfaithful_reason()));
  }
  // NVRTC takes the compiler environment when it loads, the key when the key context is made: a
  // setenv() between the two (NV_NVVM_VERSION) compiles other code than the key names. Not stored.
  if (const auto loaded_with = rtc::nvrtc_environment();
      compiled && cacheable && loaded_with && *loaded_with != context.compiler_environment) {
    cacheable = false;
    statistics.count(cache::uncached_counter(UncachedReason::environment));
    const std::string setting = loaded_with->empty() ? "no NV_NVVM_VERSION" : loaded_with->substr(0, loaded_with->find('\n'));
    log::line(program.name + ": NVRTC was loaded with " + setting +
              ", not the setting this Cache's keys were made with; compiled and not cached");
  }
  // prepare()'s texts are those make_key_texts() would make now when they hold no disk header and
  // nothing of the process: the working directory enters only through headers, pre-includes and
  // -lineinfo/-G's named-from line, and the key context is made once per Cache. A provisional
  // key is not the hash of its texts.
  if (!p.m_provisional && p.m_includes.empty() && resolution.headers.empty() && search.pre_includes.empty() &&
      !deps::options_name_files(program.options)) {
    entry.program_txt = p.m_program_txt;
    entry.options_txt = p.m_options_txt;
    compiled_entry_key = p.m_key;
  } else {
    cache::KeyTexts texts = cache::make_key_texts(program, p.arch(), context, resolution.headers);
    entry.program_txt = std::move(texts.program_txt);
    entry.options_txt = std::move(texts.options_txt);
    compiled_entry_key = texts.entry_key;
  }
  entry.headers = program.headers;
  for (deps::DiskHeader& header : resolver.result().headers) {
    // The hash the resolver made of those bytes: the record, blob rows and mirror don't hash again.
    entry.header_refs.push_back({header.path.substr(1), header.hash, header.size()});
    // Moved, not copied (a vendored CCCL's 13.7 MB: 3 ms on the caller's path): nothing reads a
    // resolution's texts after this (its manifest and closure hold none; it is freed after the
    // commit, on the store's writer thread). One let go while NVRTC ran is known by reference:
    // its encoded blob is stored, and the mirror reads it from the store.
    if (!header.shed) {
      entry.headers.emplace(header.path.substr(1), std::move(header.content));
    }
  }
  if (speculation != nullptr) {
    entry.encoded_blobs = speculation->take_encoded_blobs();  // by hash: good for whatever the compile read
  }
  if (cache::direct_eligible(program)) {
    // Found by its raw inputs, never through a manifest (prepare() reads none for it): the record
    // keeps the inputs its direct row is checked against (format 6).
    entry.direct_inputs = direct_inputs(program, p.arch());
  } else {
    const util::Sha256 manifest_key = p.m_manifest_key;
    if (cacheable) {
      offer_closure(program, search, manifest_key, resolver);  // for its other archs and its library
    }
    record_manifest(manifest_key, search.text(), resolution, speculation != nullptr ? speculation->packed_manifest() : nullptr);
    entry.manifest_key.assign(bytes_of(manifest_key));  // the manifest goes when its last entry does
  }
  compiled_with = std::move(taken);
  return entry;
}

bool Cache::Impl::persist(const util::Sha256& entry_key, const PreparedProgram& p, store::Entry entry,
                          std::shared_ptr<cache::CompileLock> lock, std::vector<std::shared_ptr<const void>> release_after)
{
  if (!store || !store->writable()) {
    return false;
  }
  // One write transaction: the record, the name index (keyed by a hash of the name, so it always
  // fits), and the manifest that leads to it.
  // The headers' contents go in as blobs, stored once however many entries use them.
  std::vector<store::Store::Row> rows{
    {store::Table::entries, std::string(bytes_of(entry_key)), store::encode_record(entry, entry_key)},
    {store::Table::names, store::names_key(p.program().name, bytes_of(entry_key)), p.program().name},
  };
  store::add_header_rows(entry, entry_key, rows);
  if (!entry.direct_inputs.empty()) {  // the direct row that leads to it without SHA-256
    const util::Checksum input_digest = util::checksum(entry.direct_inputs);
    rows.push_back({store::Table::direct, std::string(cache::input_digest_bytes(input_digest)),
                    cache::direct_row(entry_key, entry.direct_inputs.size())});
    direct_index.insert(input_digest, entry.direct_inputs, entry_key);
  }
  for (store::Store::Row& row : take_unsaved_manifest(p)) {
    rows.push_back(std::move(row));
  }
  for (store::Store::Row& row : take_closure_rows(p)) {
    rows.push_back(std::move(row));
  }
  if (cache::mentions_include(p.program())) {
    cache::add_program_rows(p.program(), p.arch(), *store, rows);  // not compiled ahead again, under any name
  }
  // A new store's toolchain rows: one commit, one fdatasync. Kept to be put back if it fails.
  std::vector<store::Store::Row> toolchain = take_toolchain_rows();
  rows.insert(rows.end(), toolchain.begin(), toolchain.end());
  std::size_t row_bytes = 0;  // what KJIT_MAX_SIZE counts of the store (size_limit.cpp)
  std::size_t blob_bound = 0;  // the most the header blobs' pages can grow by (size_limit.cpp)
  for (const store::Store::Row& row : rows) {
    const bool counted = row.table == store::Table::entries || row.table == store::Table::direct ||
                         row.table == store::Table::manifests;
    row_bytes += counted ? row.key.size() + row.value.size() : 0;
    blob_bound += row.table == store::Table::blobs ? cache::blob_growth_bound(row.key.size() + row.value.size()) : 0;
  }
  count_before_write();  // a process's first count of the store: not after this commit, waiting for it
  // The store's count for KJIT_MAX_SIZE, kept in the same commit (size_limit.cpp).
  const std::size_t mirror_bytes = mirror_guess(entry);
  add_to_count(rows, row_bytes + blob_bound + mirror_bytes);
  // The commit and its fdatasync run on the store's writer thread: the caller has its binary now.
  // Its report takes no lock a caller of the store may hold (Store::put_later).
  commits.begin();
  try {
    // (`release_after` goes with the callback, on the writer thread: store/committer.cpp.)
    store->put_later(std::move(rows), [this, lock = std::move(lock), toolchain = std::move(toolchain),
                                       release_after = std::move(release_after)](const StoreError* error) mutable {
      if (error != nullptr) {
        put_back_toolchain_rows(std::move(toolchain));  // for a later commit, or their own
        // Kept after later commits succeed: why an entry is missing.
        statistics.set_store_problem(std::string("cannot store compiled kernels: ") + error->what());
        // The caller still got its binary (and the memory tier keeps it): a store that can't be
        // written costs later processes a compile, nothing more.
        statistics.count(&CacheStats::store_errors);
        cache::warn_once(std::string("cannot store compiled kernels: ") + error->what() +
                         "; they are kept in memory only");
      }
      lock.reset();  // durable (or failed): a process waiting for this key reads the store now
      commits.end();
    });
  } catch (...) {
    commits.end();  // never queued: stats() and the destruction wait for nothing
    throw;
  }
  // Queued after the commit: the mirror's thread writes the folder once the store has the entry
  // (and skips it if the commit failed).
  mirror_entry(entry_key, std::move(entry), mirror_bytes);
  after_write(entry_key, row_bytes, blob_bound);  // KJIT_MAX_SIZE: checked on writes
  return true;
}

cache::Result cache::result_of(const store::Entry& entry)
{
  store::Entry outcome;  // what a Result holds of it: not the headers, the source or the texts
  outcome.kind = entry.kind;
  outcome.program_name = entry.program_name;
  outcome.options = entry.options;
  outcome.binary = entry.binary;
  return result_of(std::move(outcome));
}

cache::Result cache::result_of(store::Entry&& entry)
{
  Result result;
  if (entry.kind == store::EntryKind::failure) {
    result.failure =
      std::make_shared<const CompileError>(entry.program_name, entry.binary.arch, entry.binary.log, entry.options);
  } else {
    result.binary = std::make_shared<const Binary>(std::move(entry.binary));
  }
  return result;
}

const char* to_string(UncachedReason reason) noexcept
{
  switch (reason) {
  case UncachedReason::formed_name: return "formed name";
  case UncachedReason::disk_name: return "disk name";
  case UncachedReason::time: return "time";
  case UncachedReason::file_option: return "file option";
  case UncachedReason::probe: return "probe";
  case UncachedReason::names_file: return "names file";
  case UncachedReason::environment: return "environment";
  }
  return "unknown";
}

std::uint64_t CacheStats::*cache::uncached_counter(UncachedReason reason) noexcept
{
  switch (reason) {
  case UncachedReason::formed_name: return &CacheStats::uncached_formed_name;
  case UncachedReason::disk_name: return &CacheStats::uncached_disk_name;
  case UncachedReason::time: return &CacheStats::uncached_time;
  case UncachedReason::file_option: return &CacheStats::uncached_file_option;
  case UncachedReason::probe: return &CacheStats::uncached_probe;
  case UncachedReason::names_file: return &CacheStats::uncached_names_file;
  case UncachedReason::environment: break;
  }
  return &CacheStats::uncached_environment;
}

const char* to_string(Source source) noexcept
{
  switch (source) {
  case Source::memory: return "memory";
  case Source::disk: return "disk";
  case Source::bundle: return "bundle";
  case Source::remote: return "remote";
  case Source::compiled: return "compiled";
  case Source::compiled_elsewhere: return "compiled by another process";
  }
  return "unknown";
}

cache::Result Cache::Impl::load_or_compile(const util::Sha256& prepared_key, const PreparedProgram& p, Source& source,
                                           bool& keepable)
{
  keepable = true;
  const util::Stopwatch watch;
  const bool provisional = is_provisional(prepared_key);
  if (auto entry = provisional ? std::nullopt : load(prepared_key, p.program().name, p.arch())) {
    statistics.count(&CacheStats::disk_hits, &CacheStats::compile_ms_saved, entry->binary.timings.total_ms);
    if (entry->kind == store::EntryKind::failure) {
      statistics.count(&CacheStats::failed_hits);
    }
    source = Source::disk;
    verbose("hit disk", p, watch.elapsed_ms());
    if (auto manifest = take_unsaved_manifest(p); !manifest.empty() && store->writable()) {
      store->put(manifest);
    }
    return cache::result_of(std::move(*entry));
  }
  if (auto entry = load_from_tiers(prepared_key, p, source)) {
    verbose(("hit " + std::string(to_string(source))).c_str(), p, watch.elapsed_ms());
    return cache::result_of(std::move(*entry));
  }
  util::Sha256 predicted_entry_key{};  // a provisional key's prediction's own key, once load_predicted made it
  std::shared_ptr<deps::Resolver> prediction;
  // A speculation compiled this program from the disk: it began because the store held no entry
  // of its program for its arch, or because each resolution of its manifest here has a header
  // that changed (and the manifest is not full), and no tier was there to ask (may_speculate()),
  // so the prediction's own key names none, unless another resolution context (another spelling
  // of the program) stored what is on disk now. Not made again after NVRTC returned (a second
  // close() of the prediction, a stat per header and its key texts: 15 ms for a vendored CCCL);
  // an entry stored meanwhile, or by that other context, is the one this compile stores again.
  const cache::Speculation* speculation = cache::current_speculation(p.program(), p.arch());
  if (provisional && (speculation == nullptr || !speculation->compiled())) {
    if (auto entry = load_predicted(p, predicted_entry_key, source, prediction)) {
      verbose("hit (headers found at another place)", p.program().name, p.arch(), predicted_entry_key, watch.elapsed_ms());
      cache::Result result = cache::result_of(std::move(*entry));
      keep(predicted_entry_key, result, source);
      return result;
    }
  }
  statistics.count(&CacheStats::misses);
  std::shared_ptr<cache::CompileLock> lock;  // held until the commit of the result is durable
  if (store && store->writable()) {
    lock = std::make_shared<cache::CompileLock>(store->io_path(), prepared_key, config.compile_lock_timeout_s);
  }
  if (lock && !provisional) {
    // Another process may have stored the result while we asked for the lock.
    if (auto entry = load(prepared_key, p.program().name, p.arch())) {
      statistics.count(&CacheStats::compiled_elsewhere);
      source = Source::compiled_elsewhere;
      verbose("hit disk (compiled by another process)", p, watch.elapsed_ms());
      return cache::result_of(std::move(*entry));
    }
    if (lock->timed_out()) {
      cache::warn_once("waited " + std::to_string(config.compile_lock_timeout_s) +
                       " s (KJIT_COMPILE_LOCK_TIMEOUT) for another process compiling the same kernel; compiling it here");
    }
  }
  // KJIT_REMOTE_CACHE: one node of the fleet compiles, the others wait (tiers.cpp). Released when
  // this function returns: after the compiled record was offered, so waiting nodes find it.
  remote::Lease lease;
  const util::Sha256& lease_entry_key = provisional ? predicted_entry_key : prepared_key;
  if (auto entry = lease_entry_key == util::Sha256{} ? std::nullopt : await_fleet(lease_entry_key, p, lease)) {
    source = Source::remote;
    verbose("hit remote (compiled by another node)", p.program().name, p.arch(), lease_entry_key, watch.elapsed_ms());
    if (prediction) {
      // As for a hit of the prediction: the next lookup finds the key the entry is stored under
      // (without the manifest, a `kjit compile` here printed the provisional key, which names none).
      remember_prediction(p, *prediction);
    }
    cache::Result result = cache::result_of(std::move(*entry));
    memory.insert(lease_entry_key, result);
    return result;
  }
  if (store && store->writable()) {
    store->walk_ahead();  // the walk before this process's first write runs beside the compile
  }
  util::Sha256 compiled_entry_key;
  source = Source::compiled;
  bool cacheable = true;
  std::shared_ptr<deps::Resolver> compiled_with;
  store::Entry entry = compile_entry(p, compiled_entry_key, cacheable, compiled_with);
  keepable = cacheable;
  const bool binary = entry.kind == store::EntryKind::binary;
  cache::Result result = cacheable ? cache::result_of(entry) : cache::result_of(std::move(entry));
  if (cacheable) {
    offer_to_tiers(compiled_entry_key, entry);  // the remote tier queues it for its upload thread
    // The resolvers are freed after the commit, on the store's writer thread. The entry goes to the
    // mirror's thread last, with its headers' contents (a vendored CCCL's 13.7 MB): not copied.
    if (persist(compiled_entry_key, p, std::move(entry), std::move(lock),
                {std::move(compiled_with), std::move(prediction)})) {
      result.stored_key = compiled_entry_key;
    }
  }
  // The key it is stored under (a provisional key names no entry); one not cached, or with no
  // store to keep it, is said so without a key (a commit that fails later warns on its own).
  if (result.stored_key) {
    verbose(binary ? "miss, compiled" : "miss, compile error", p.program().name, p.arch(), compiled_entry_key,
            watch.elapsed_ms());
  } else {
    verbose(cacheable ? (binary ? "miss, compiled, not stored (no writable store)" : "miss, compile error, not stored (no writable store)")
                      : (binary ? "miss, compiled, not cached" : "miss, compile error, not cached"),
            p.program().name, p.arch(), nullptr, watch.elapsed_ms());
  }
  if (cacheable && compiled_entry_key != prepared_key) {
    memory.insert(compiled_entry_key, result);  // found under its true key by the next, validated, lookup
  }
  return result;
}

} // namespace kjit
