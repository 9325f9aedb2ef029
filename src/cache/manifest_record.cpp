// Manifests recorded: what a compile's resolution adds to its program's manifest (merged with the
// store's row, its oldest states let go), packed beside NVRTC or after it, kept in the book until
// the entry's commit stores it (docs/cache-format.md, "Disk headers and manifests").
#include "cache/cache_impl.hpp"

#include "deps/manifest_head.hpp"
#include "store/compress.hpp"

#include <atomic>
#include <memory>
#include <set>
#include <string_view>
#include <utility>
#include <vector>

namespace kjit {

namespace {

std::atomic<std::uint64_t> g_packed_ahead{0};

// What a manifest records of a resolution: no texts (a vendored CCCL's are 20 MB), and an
// unsettled stamp for a folder too new to stand for it (its names are asked at every check; a
// whole one is not recordable).
deps::Resolution recorded_entry(const deps::Resolution& resolution)
{
  deps::Resolution recorded;
  recorded.dirs = resolution.dirs;
  for (deps::ProbedDir& dir : recorded.dirs) {
    if (dir.too_new) {
      dir.stamp = deps::unsettled(dir.stamp);
    }
  }
  recorded.recordable = resolution.recordable;
  recorded.closure = resolution.closure;
  recorded.headers.reserve(resolution.headers.size());
  for (const auto& header : resolution.headers) {
    recorded.headers.push_back({header.name, header.path, header.hash, header.stamp, {}, header.spelled});
  }
  return recorded;
}

// XXH3-128 of every field of `entry`, each with its length (the folders' absent names, most of its
// bytes, read in place): what manifest_ahead() keeps of the entry it packed.
util::Checksum entry_digest(const deps::Resolution& entry)
{
  std::string fields;  // every field but the absent names
  std::vector<std::pair<std::size_t, std::string_view>> absent;  // each folder's, and where in `fields`
  const auto number = [&](std::uint64_t value) { fields.append(reinterpret_cast<const char*>(&value), sizeof value); };
  const auto text = [&](std::string_view value) {
    fields.append(value);
    number(value.size());
  };
  const auto names = [&](const std::set<std::string>& set) {
    number(set.size());
    for (const std::string& name : set) {
      text(name);
    }
  };
  const auto stamp = [&](const deps::FileStamp& at) {
    for (const std::uint64_t value : {std::uint64_t{at.exists}, static_cast<std::uint64_t>(at.size),
                                      static_cast<std::uint64_t>(at.mtime_ns), static_cast<std::uint64_t>(at.ctime_ns),
                                      at.inode, at.device}) {
      number(value);
    }
  };
  number(entry.headers.size());
  for (const deps::DiskHeader& header : entry.headers) {
    text(header.name);
    text(header.path);
    fields.append(reinterpret_cast<const char*>(header.hash.data()), header.hash.size());
    stamp(header.stamp);
    text(header.content);
    text(header.spelled);
    number(header.shed);
    number(header.shed_size);
  }
  number(entry.dirs.size());
  for (const deps::ProbedDir& dir : entry.dirs) {
    text(dir.path);
    stamp(dir.stamp);
    number(dir.whole);
    number(dir.too_new);
    number(dir.absent.size());
    absent.emplace_back(fields.size(), dir.absent);
  }
  number(entry.recordable);
  number(entry.closure.has_value());
  if (const auto& closure = entry.closure) {
    fields.append(reinterpret_cast<const char*>(closure->seed_key.data()), closure->seed_key.size());
    names(closure->computed_dirs);
    names(closure->climbing_names);
    number(closure->once_by_macro);
    number(closure->names_files);
    text(closure->two_names);
    names(closure->include_macros);
    number(closure->pastes);
  }
  // `fields` up to each folder's place, then its names, in order; an empty part would end the input.
  std::vector<std::string_view> parts;
  std::size_t at = 0;
  for (const auto& [place, names_there] : absent) {
    parts.push_back(std::string_view(fields).substr(at, place - at));
    parts.push_back(names_there);
    at = place;
  }
  parts.push_back(std::string_view(fields).substr(at));
  std::size_t next = 0;
  return util::checksum_of_parts([&]() -> std::string_view {
    while (next < parts.size()) {
      if (const std::string_view part = parts[next++]; !part.empty()) {
        return part;
      }
    }
    return {};
  });
}

} // namespace

void Cache::Impl::merge_stored_row(const util::Sha256& manifest_key, cache::KnownManifest& copy, util::Checksum* stored_row)
{
  const auto row = store ? stored_row_of(bytes_of(manifest_key)) : std::nullopt;
  if (!row || *row == copy.stored_row || copy.rows.count(*row) != 0) {
    return;
  }
  // The store's row is not this copy's: another Cache or process stored states since (or this
  // copy's commit is still on its way). Its entries this copy lacks come first (stored since this
  // copy was made), and the states it let go are kept too: else they went unrecorded, and a full
  // manifest was taken for outdated while the store held an entry of what is on disk (found by a
  // review).
  deps::LetGo theirs;
  if (auto decoded = stored_manifest(bytes_of(manifest_key), copy.context, stored_row, &theirs)) {
    std::set<util::Checksum> ours;
    for (const deps::Resolution& mine : copy.entries) {
      ours.insert(entry_digest(mine));
    }
    deps::Manifest merged;
    for (deps::Resolution& other : *decoded) {
      if (ours.insert(entry_digest(other)).second) {
        merged.push_back(std::move(other));
      }
    }
    copy.entries.insert(copy.entries.begin(), std::make_move_iterator(merged.begin()), std::make_move_iterator(merged.end()));
    for (deps::LetGoState& state : theirs.states) {
      deps::keep_let_go_state(copy.let_go, std::move(state), false);
    }
  }
  copy.let_go.tracked = copy.let_go.tracked && theirs.tracked;  // untracked when it does not decode
  cache::took_in(copy, *row);
}

cache::KnownManifest Cache::Impl::manifest_with(const util::Sha256& manifest_key, const std::string& context,
                                                deps::Resolution entry, util::Checksum* stored_row)
{
  cache::KnownManifest updated;
  {
    std::lock_guard lock(manifests.mutex);
    if (const auto it = manifests.known.find(manifest_key);
        it != manifests.known.end() && it->second.context == context && !it->second.partial) {
      updated = it->second;
    }
  }
  cache::materialize(updated);  // (on the thread that prepares a miss compiled ahead, beside NVRTC)
  if (updated.entries.empty() && store) {
    updated.version = 0;  // the store's, or none
    updated.let_go = {};
    util::Checksum base{};
    if (auto decoded = stored_manifest(bytes_of(manifest_key), context, &base, &updated.let_go)) {
      updated.entries = std::move(*decoded);
      updated.rows.clear();
      cache::took_in(updated, base);
    }
    *stored_row = base;
  } else {
    merge_stored_row(manifest_key, updated, stored_row);
  }
  updated.context = context;
  updated.entries.insert(updated.entries.begin(), std::move(entry));
  deps::let_go_of_oldest(updated.entries, updated.let_go);
  return updated;
}

std::optional<cache::PackedManifest> Cache::Impl::manifest_ahead(const Program& program, const util::Sha256& manifest_key,
                                                                 const deps::Resolver& prediction)
{
  const deps::Resolution& resolution = prediction.result();
  if (!resolution.recordable) {
    return std::nullopt;
  }
  const std::string context = prediction.context().text();
  deps::Resolution recorded = recorded_entry(resolution);
  // With the closure the compile offers (offer_closure()) before it records the manifest.
  if (const util::Sha256 seed = closure_seed_key(program, prediction.context()); seed != util::Sha256{}) {
    recorded.closure = prediction.closure_state(seed);
  }
  cache::PackedManifest ahead{manifest_key, context, 0, {}, entry_digest(recorded), {}, {}, {}};
  const cache::KnownManifest updated = manifest_with(manifest_key, context, std::move(recorded), &ahead.stored_row);
  ahead.version = updated.version;
  ahead.rows = updated.rows;
  ahead.packed = store::packed(deps::encode_manifest(updated.entries, updated.context, updated.let_go));
  ahead.head = store::packed(deps::encode_manifest_head(updated.entries, updated.context, updated.let_go,
                                                        util::checksum(ahead.packed)));
  return ahead;
}

bool Cache::Impl::packed_ahead_holds(const cache::PackedManifest& ahead)
{
  // The base manifest_with() would take now, told by its version and the store's row's checksum
  // as manifest_with() tells them (decoding nothing): the book's copy, else the store's row.
  std::optional<cache::KnownManifest> copy;
  {
    std::lock_guard lock(manifests.mutex);
    if (const auto it = manifests.known.find(ahead.key); it != manifests.known.end() && it->second.context == ahead.context &&
                                                         !it->second.partial && !it->second.entries.empty()) {
      copy.emplace();
      copy->version = it->second.version;
      copy->stored_row = it->second.stored_row;
      copy->rows = it->second.rows;
    }
  }
  const auto row = store ? stored_row_of(bytes_of(ahead.key)) : std::nullopt;
  util::Checksum base_row{};
  if (!copy) {
    base_row = row.value_or(util::Checksum{});
  } else if (row && *row != copy->stored_row && copy->rows.count(*row) == 0) {
    base_row = *row;
  }
  return (copy ? copy->version : 0) == ahead.version && base_row == ahead.stored_row;
}

void Cache::Impl::record_manifest(const util::Sha256& manifest_key, const std::string& context,
                                  const deps::Resolution& resolution, cache::PackedManifest* ahead)
{
  if (!resolution.recordable) {
    return;  // a header too new to trust its stamp: the next lookup compiles again
  }
  deps::Resolution recorded = recorded_entry(resolution);
  const bool same_entry =
    ahead != nullptr && ahead->key == manifest_key && ahead->context == context && ahead->entry == entry_digest(recorded);
  if (same_entry && !ahead->packed.empty() && packed_ahead_holds(*ahead)) {
    // Its packed bytes are this manifest, made from the base it would be made from now: kept
    // packed, its newest entry beside them (KnownManifest::packed_whole), not decoded again.
    cache::KnownManifest packed;
    packed.context = context;
    packed.entries.push_back(std::move(recorded));
    packed.packed_whole = std::make_shared<const std::string>(std::move(ahead->packed));
    packed.packed_head = std::make_shared<const std::string>(std::move(ahead->head));
    packed.rows = ahead->rows;
    g_packed_ahead.fetch_add(1, std::memory_order_relaxed);
    save_manifest(manifest_key, packed, false);
    return;
  }
  util::Checksum stored_row{};
  cache::KnownManifest updated = manifest_with(manifest_key, context, std::move(recorded), &stored_row);
  // Packed ahead from this same manifest (the same entry first in the same copy of this Cache's,
  // or the same row of the store's, or none): its bytes are this manifest's, encoded beside NVRTC
  // instead of here.
  std::string packed;
  if (same_entry && updated.version == ahead->version && stored_row == ahead->stored_row) {
    packed = std::move(ahead->packed);
    g_packed_ahead.fetch_add(1, std::memory_order_relaxed);
  }
  // Stored with the entry's commit: no extra write transaction on a miss.
  save_manifest(manifest_key, updated, false, std::move(packed));
}

std::uint64_t cache::manifests_packed_ahead() noexcept
{
  return g_packed_ahead.load(std::memory_order_relaxed);
}

} // namespace kjit
