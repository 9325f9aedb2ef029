// A miss of a program whose other arch (or other name expressions) was compiled: its headers are
// taken from that compile's closed resolution instead of being predicted and closed again.
#include "cache/cache_impl.hpp"

#include "store/record.hpp"
#include "util/file.hpp"

#include <set>

namespace kjit {

namespace {

// Entries of one program name looked at for a seed: a program name many programs share (a
// generated "kernel.cu") costs at most this many record reads on a miss.
constexpr std::size_t k_seed_candidates = 32;

// Fills each header's content from the disk: the stamp before and after the read as recorded, the
// bytes hashing as recorded. False when one differs (the seed is not used: the headers are
// predicted again).
bool read_contents(deps::Resolution& resolution)
{
  for (deps::DiskHeader& header : resolution.headers) {
    std::error_code error;
    if (!(deps::stamp_of(header.path) == header.stamp)) {
      return false;
    }
    auto content = util::read_file(header.path, error);
    if (!content || !(deps::stamp_of(header.path) == header.stamp) || util::sha256(*content) != header.hash) {
      return false;
    }
    header.content = std::move(*content);
  }
  return true;
}

} // namespace

util::Sha256 Cache::Impl::closure_seed_key(const Program& program, const deps::SearchContext& search)
{
  const cache::KeyContext& context = key_context();
  return deps::seed_key(program, search, context.nvrtc_identity + "\n" + context.toolkit_headers.value());
}

std::shared_ptr<deps::Resolver> Cache::Impl::seeded_resolver(const Program& program, const deps::SearchContext& search)
{
  if (!store) {
    return nullptr;
  }
  const util::Sha256 seed = closure_seed_key(program, search);
  if (seed == util::Sha256{}) {
    return nullptr;
  }
  std::vector<std::string> candidates;
  const std::string prefix = store::names_prefix(program.name);
  store->for_each_prefix(store::Table::names, prefix, [&](std::string_view name_key, std::string_view name) {
    if (name == program.name && candidates.size() < k_seed_candidates) {
      candidates.emplace_back(name_key.substr(prefix.size()));
    }
  });
  const std::string context = search.text();
  std::set<std::string> manifests_read;
  for (const std::string& candidate : candidates) {
    std::string manifest_key;
    store->visit(store::Table::entries, candidate, [&](std::string_view bytes) {
      if (const auto named = store::input_field(bytes, store::InputField::manifest_key)) {
        manifest_key = *named;
      }
    });
    if (manifest_key.empty() || !manifests_read.insert(manifest_key).second) {
      continue;
    }
    const auto bytes = store->get(store::Table::manifests, manifest_key);
    auto manifest = bytes ? deps::decode_manifest(*bytes, context) : std::nullopt;
    for (deps::Resolution& resolution : manifest ? *manifest : deps::Manifest{}) {
      if (!resolution.closure || resolution.closure->seed_key != seed) {
        continue;
      }
      deps::ValidationCounters counters;
      if (deps::validate(resolution, counters) == deps::Validation::changed || !read_contents(resolution)) {
        continue;
      }
      statistics.update([&](CacheStats& stats) { stats.header_stats += counters.stats; });
      return std::make_shared<deps::Resolver>(program, search, std::move(resolution));
    }
  }
  return nullptr;
}

} // namespace kjit
