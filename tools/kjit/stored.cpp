#include "stored.hpp"

#include <kjit/error.hpp>
#include <kjit/uncached.hpp>

#include <cstdint>
#include <utility>

namespace kjit::cli {

std::optional<std::string> stored_key(Cache& cache, const Program& program, const Arch& arch, const Binary& binary,
                                      const std::string& looked_up)
{
  if (cache.config().disable_cache) {
    return std::string();
  }
  if (!cache.has_disk_tier()) {
    return std::nullopt;
  }
  try {
    // One row's look (Cache::stats() waited for the commit); prepare() would stat every header again.
    if (looked_up.size() == 64 && cache.resolve_key(looked_up) == looked_up) {
      return looked_up;
    }
  } catch (const Error&) {
    // not stored after all (the commit failed): the ways below say so
  }
  try {
    if (std::string key = cache.resolve_key(cache.prepare(program, arch).key()); key.size() == 64) {
      return key;
    }
  } catch (const Error&) {
    // no entry under that key (or the program can't be prepared now)
  }
  try {
    for (const EntryInfo& info : cache.entries({program.name, binary.arch})) {
      const EntryContents contents = cache.entry(info.key);
      if (!info.failed && contents.binary.cubin == binary.cubin && contents.binary.ptx == binary.ptx) {
        return info.key;
      }
    }
  } catch (const Error&) {
  }
  return std::nullopt;
}

std::string why_not_stored(const Cache& cache, const CacheStats& before, const CacheStats& after)
{
  const std::pair<UncachedReason, std::uint64_t CacheStats::*> refusals[] = {
    {UncachedReason::formed_name, &CacheStats::uncached_formed_name},
    {UncachedReason::disk_name, &CacheStats::uncached_disk_name},
    {UncachedReason::time, &CacheStats::uncached_time},
    {UncachedReason::file_option, &CacheStats::uncached_file_option},
    {UncachedReason::probe, &CacheStats::uncached_probe},
    {UncachedReason::names_file, &CacheStats::uncached_names_file},
    {UncachedReason::environment, &CacheStats::uncached_environment},
  };
  std::string why = cache.store_problem();
  for (const auto& [reason, counter] : refusals) {
    if (after.*counter > before.*counter) {
      const std::string refusal =
        std::string("not cached: ") + to_string(reason) + " (the warning above names the program and why)";
      why = why.empty() ? refusal : why + "; " + refusal;
      break;
    }
  }
  return why.empty() ? "the store did not keep them (the warnings above say why)" : why;
}

} // namespace kjit::cli
