// A provisional key's prediction looked up as it is: keys are portable, so a project that moved
// (no manifest holds for its new folders) still finds the entries compiled at the old place.
#include "cache/cache_impl.hpp"

#include "cache/direct_index.hpp"
#include "deps/search.hpp"
#include "store/blobs.hpp"
#include "rtc/compiler.hpp"
#include "rtc/file_watch.hpp"
#include "rtc/toolkit.hpp"

#include <cstring>
#include <set>

namespace kjit {

std::shared_ptr<deps::Resolver> Cache::Impl::predicted_key(const PreparedProgram& p, util::Sha256& predicted_entry_key)
{
  const util::Sha256 provisional_key = p.m_key;
  // A speculation's prediction is its own (seen by no other lookup); else prepare()'s, shared.
  const cache::Speculation* speculation = cache::current_speculation(p.program(), p.arch());
  std::shared_ptr<deps::Resolver> resolver = speculation != nullptr ? speculation->prediction() : nullptr;
  if (!resolver) {
    std::lock_guard lock(manifests.mutex);
    if (const auto it = manifests.predictions.find(provisional_key); it != manifests.predictions.end()) {
      resolver = it->second;  // left in place: a miss hands it to the compile
    }
  }
  if (!resolver || !resolver->unchanged()) {
    return nullptr;
  }
  // What a compile would start from: the prediction and every file an include of a known name
  // could reach. A compile that needed no further header stored exactly this key; NVRTC sees only
  // these copies, so the same headers give the same output wherever they are.
  resolver->close();
  if (!resolver->unfaithful().empty()) {
    return nullptr;  // the private folder can't answer as the disk would: compiled from disk, never served
  }
  predicted_entry_key = cache::make_key_texts(p.program(), p.arch(), key_context(), resolver->result().headers).entry_key;
  return resolver;
}

cache::AheadVerdict Cache::Impl::speculate(const Program& program, const Arch& arch,
                                          std::optional<cache::Speculation>& speculation)
{
  cache::AheadVerdict verdict;
  if (!cache::mentions_include(program)) {
    return verdict;
  }
  const Arch resolved = rtc::resolve_arch(arch.is_auto() ? Arch::parse(config.arch) : arch);
  const util::Sha256 digest = cache::program_digest(program);
  const bool known = known_programs.contains(digest, resolved);
  if (!known) {
    verdict.unknown = digest;
  }
  switch (cache::may_speculate(program, digest, resolved, store.get(), !tiers.empty(), known)) {
  case cache::Ahead::never:
    break;
  case cache::Ahead::if_outdated:
    verdict.if_outdated = true;
    break;
  case cache::Ahead::now:
    speculate_now(program, arch, speculation);
    break;
  }
  return verdict;
}

bool Cache::Impl::entry_without_rows_may_serve(const Program& program, const Arch& arch)
{
  try {
    return !store || cache::entries_without_program_rows_may_serve(program, arch, *store);
  } catch (const Error&) {
    return true;
  }
}

void Cache::Impl::speculate_now(const Program& program, const Arch& arch, std::optional<cache::Speculation>& speculation)
{
  // The key context, when the toolchain's versions are remembered (not the toolkit headers'
  // fingerprint: the preparing thread finds it for this program's key while NVRTC compiles). Else
  // (a new store) the preparing thread makes it, learning NVRTC's build from this compile's PTX
  // (rtc::CompileAhead) instead of compiling a probe first. Bad -I/-D options fail here, before a
  // compile that would take its time to come to nothing.
  key_context_if_known();
  deps::search_context(program, rtc::toolkit_for(config).include_dirs);
  if (auto watch = rtc::FileWatch::claim()) {  // none while another compile of this process is watched
    speculation.emplace(config, program, rtc::resolve_arch(arch.is_auto() ? Arch::parse(config.arch) : arch),
                        std::move(watch));
  }
}

std::map<util::Sha256, std::string> Cache::Impl::prepare_ahead(deps::Resolver& prediction, std::set<util::Sha256>& stored)
{
  prediction.close();
  prediction.shed_absent_index();  // here, while NVRTC runs: not at the end of the caller's lookup
  if (prediction.names_files()) {
    prediction.headers_name_program();  // asked by the compile (wants_stub()), answered here
  }
  std::map<util::Sha256, std::string> blobs;
  if (!prediction.unfaithful().empty()) {
    return blobs;  // compiled from the disk, not stored
  }
  // The process's first count for KJIT_MAX_SIZE walks the mirror (a vendored CCCL's: ≈ 9 ms of
  // stats after NVRTC, on the caller's path): made here, beside NVRTC, before these headers are
  // staged (their entry's write adds its own guess of them).
  count_before_write();
  if (!store || !store->writable()) {
    mirror_headers_early(prediction.result());
    return blobs;
  }
  // Encoded here, beside NVRTC, not on the writer's thread after it (where the caller's exit, and
  // `kjit compile`'s report of the key, wait for the commit). Those the store holds intact are
  // left, and named in `stored` (the entry's commit requires them: store::Store::Row::present).
  try {
    std::vector<const deps::DiskHeader*> asked;
    std::vector<std::string> keys;
    std::set<util::Sha256> seen;
    for (const deps::DiskHeader& header : prediction.result().headers) {
      if (!header.content.empty() && stored.count(header.hash) == 0 && seen.insert(header.hash).second) {
        asked.push_back(&header);
        keys.push_back(store::blob_key(header.hash));
      }
    }
    store->visit_each(store::Table::blobs, keys, [&](std::size_t i, std::string_view bytes) {
      if (store::blob_intact(bytes)) {
        stored.insert(asked[i]->hash);
      }
    });
    for (const deps::DiskHeader* header : asked) {
      if (stored.count(header->hash) == 0) {
        blobs.emplace(header->hash, store::encode_blob(header->content));
      }
    }
  } catch (const StoreError&) {
    // (the commit encodes what is missing here, and meets the store's trouble itself)
  }
  if (mirror_writer) {
    // The texts whose blobs are made or stored go to the mirror's early links, moved: the caller
    // lets them go next (shed_texts()), and a copy of a vendored CCCL's 20 MB here made NVRTC,
    // beside it, 10 ms slower (the pages of the copy, and their return to the system).
    std::vector<mirror::EarlyHeader> taken;
    prediction.shed_texts([&](const util::Sha256& hash) { return blobs.count(hash) != 0 || stored.count(hash) != 0; },
                          [&](const deps::DiskHeader& header, std::string&& text) {
                            taken.push_back({header.path.substr(1), util::to_hex(header.hash), std::move(text)});
                          });
    mirror_headers_early(prediction.result(), std::move(taken));
  }
  return blobs;
}

std::optional<store::Entry> Cache::Impl::load_predicted(const PreparedProgram& p, util::Sha256& predicted_entry_key,
                                                        Source& source, std::shared_ptr<deps::Resolver>& prediction)
{
  prediction = predicted_key(p, predicted_entry_key);
  if (!prediction) {
    return std::nullopt;
  }
  std::optional<store::Entry> entry = load(predicted_entry_key, p.program().name, p.arch());
  if (entry) {
    statistics.count(&CacheStats::disk_hits, &CacheStats::compile_ms_saved, entry->binary.timings.total_ms);
    source = Source::disk;
  } else if (!(entry = load_from_tiers(predicted_entry_key, p, source))) {
    return std::nullopt;
  }
  if (entry->kind == store::EntryKind::failure) {
    // A failure may come from a header the prediction can't see (a computed include of a file
    // missing then): only a compile can say whether it still fails, and it records the true key.
    return std::nullopt;
  }
  remember_prediction(p, *prediction);
  return entry;
}

void Cache::Impl::remember_prediction(const PreparedProgram& p, deps::Resolver& prediction)
{
  // The next lookup here takes the manifest's fast path to the same key.
  const util::Sha256 manifest_key = p.m_manifest_key;
  record_manifest(manifest_key, deps::search_context(p.program(), key_context().toolkit_include_dirs).text(),
                  prediction.result());
  if (auto manifest = take_unsaved_manifest(p); !manifest.empty() && store && store->writable()) {
    try {
      store->put(manifest);
    } catch (const StoreError& e) {
      cache::warn_once(std::string("cannot store a manifest: ") + e.what());
    }
  }
}

} // namespace kjit
