// A lookup by raw inputs: XXH3-128 of them finds the entry key in memory or in the store's
// direct table, and the inputs are compared in full before anything is served.
#include "cache/cache_impl.hpp"

#include "rtc/compiler.hpp"
#include "store/record.hpp"
#include "util/stopwatch.hpp"

namespace kjit {

std::string Cache::Impl::direct_inputs(const Program& program, const Arch& arch)
{
  key_context();  // makes inputs_toolchain once
  return cache::direct_inputs(program, arch, inputs_toolchain);
}

Cache::Impl::Direct Cache::Impl::direct_lookup(const Program& program, const Arch& arch, Source& source)
{
  const util::Stopwatch watch;
  const Arch resolved = rtc::resolve_arch(arch.is_auto() ? Arch::parse(config.arch) : arch);
  Direct out;
  out.inputs = direct_inputs(program, resolved);
  out.input_digest = util::checksum(out.inputs);
  const auto memory_hit = [&](const util::Sha256& key, cache::Result found) {
    memory.count_hit(key, found, store != nullptr);
    source = Source::memory;
    verbose("hit memory", program.name, resolved, key, 0.0);
    out.hit = std::move(found);
  };
  std::optional<util::Sha256> key = direct_index.find(out.input_digest, out.inputs);
  if (key && !is_provisional(*key)) {
    if (auto found = memory.find(*key)) {
      memory_hit(*key, std::move(*found));
      return out;
    }
  }
  // Not in memory: the entry the direct row names (or, with a known key, the entry itself).
  util::Sha256 entry_key = key.value_or(util::Sha256{});
  std::optional<store::Entry> entry = load_entry(entry_key, program.name, resolved, key ? nullptr : &out);
  if (out.in_memory && !is_provisional(entry_key)) {
    // The row led to the memory tier (an entry a compile or another path put there). Its inputs
    // are kept from now on (a program looked up once keeps none: 4 KiB more per kernel of a bulk
    // warm start).
    memory_hit(entry_key, std::move(*out.in_memory));
    direct_index.insert(out.input_digest, std::move(out.inputs), entry_key);
    return out;
  }
  if (!entry || is_provisional(entry_key)) {
    return out;
  }
  statistics.count(&CacheStats::disk_hits, &CacheStats::compile_ms_saved, entry->binary.timings.total_ms);
  if (entry->kind == store::EntryKind::failure) {
    statistics.count(&CacheStats::failed_hits);
  }
  cache::Result result = cache::result_of(std::move(*entry));
  source = Source::disk;
  verbose("hit disk", program.name, resolved, entry_key, watch.elapsed_ms());
  if (memory.admit(entry_key, result)) {
    // Its second disk hit: the binary and the inputs are kept from now on, so the next lookup is
    // a memory hit without the store (a program looked up once keeps neither: ≈ 9 KiB of heap
    // per kernel of a bulk warm start).
    direct_index.insert(out.input_digest, std::move(out.inputs), entry_key);
  }
  out.hit = std::move(result);
  return out;
}

} // namespace kjit
