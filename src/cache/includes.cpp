// Manifests in use: a warm lookup stats the headers a manifest lists instead of compiling to learn them.
#include "cache/cache_impl.hpp"

#include "store/compress.hpp"
#include "util/file.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <numeric>
#include <set>
#include <string_view>
#include <utility>
#include <vector>

namespace kjit {

namespace {

// Notes that `manifest` holds all of the store's row of checksum `row` (a few at most: a long-lived
// Cache stores one per compile of the program).
void took_in(cache::KnownManifest& manifest, const util::Checksum& row)
{
  if (row == util::Checksum{}) {
    return;
  }
  if (manifest.rows.size() >= 16) {
    manifest.rows.erase(manifest.rows.begin());
  }
  manifest.rows.insert(row);
}

// deps::validate(), its stats and rehashes counted in `statistics`.
deps::Validation counted_validate(deps::Resolution& entry, cache::Statistics& statistics,
                                  deps::ChangedHeader* changed = nullptr)
{
  deps::ValidationCounters counters;
  const deps::Validation validation = deps::validate(entry, counters, changed);
  statistics.update([&](CacheStats& stats) {
    stats.header_stats += counters.stats;
    stats.header_rehashes += counters.rehashes;
  });
  return validation;
}

// `manifest` whole: its packed row decoded, when it holds that alone (KnownManifest::packed_whole).
// One that does not decode keeps its newest entry, and may have let any state go.
void materialize(cache::KnownManifest& manifest)
{
  if (!manifest.packed_whole) {
    return;
  }
  const auto text = store::unpacked(*manifest.packed_whole);
  deps::LetGo let_go;
  if (auto decoded = text ? deps::decode_manifest(*text, manifest.context, &let_go) : std::nullopt;
      decoded && !decoded->empty()) {
    manifest.entries = std::move(*decoded);
    manifest.let_go = std::move(let_go);
  } else {
    manifest.let_go = deps::LetGo{false, {}};
  }
  manifest.packed_whole.reset();
}

} // namespace

void Cache::Impl::save_manifest(const util::Sha256& manifest_key, const cache::KnownManifest& manifest, bool now,
                                std::string packed)
{
  std::string value;
  if (now && store && store->writable()) {
    value = manifest.packed_whole ? *manifest.packed_whole
                                  : store::packed(deps::encode_manifest(manifest.entries, manifest.context, manifest.let_go));
  }
  {
    std::lock_guard lock(manifests.mutex);
    keep_known(manifest_key, manifest);
    // Stored now, the row is this copy; else it is this process's until its commit.
    cache::KnownManifest& kept = manifests.known[manifest_key];
    kept.stored_row = value.empty() ? util::Checksum{} : util::checksum(value);
    took_in(kept, kept.stored_row);
    if (now) {
      manifests.unsaved.erase(manifest_key);
    } else {
      manifests.unsaved.insert(manifest_key);
      if (!packed.empty()) {
        manifests.packed[manifest_key] = std::move(packed);
      }
    }
  }
  if (!value.empty()) {
    store->put(store::Table::manifests, bytes_of(manifest_key), std::move(value));
  }
}

void Cache::Impl::keep_known(const util::Sha256& manifest_key, const cache::KnownManifest& manifest)
{
  cache::KnownManifest& kept = manifests.known[manifest_key] = manifest;
  took_in(kept, kept.stored_row);
  kept.version = manifests.next_version++;
  manifests.packed.erase(manifest_key);  // made from another copy
}

std::optional<store::Store::Row> Cache::Impl::take_unsaved_manifest(const PreparedProgram& prepared)
{
  const util::Sha256 manifest_key = prepared.m_manifest_key;
  std::lock_guard lock(manifests.mutex);
  if (manifests.unsaved.erase(manifest_key) == 0) {
    return std::nullopt;
  }
  cache::KnownManifest& known = manifests.known.at(manifest_key);
  store::Store::Row row{store::Table::manifests, std::string(bytes_of(manifest_key)), {}};
  if (known.packed_whole) {
    row.value = *known.packed_whole;
  } else if (const auto packed = manifests.packed.find(manifest_key); packed != manifests.packed.end()) {
    row.value = std::move(packed->second);  // of this copy: keep_known() drops it with the copy it was made of
    manifests.packed.erase(packed);
  } else {
    row.value = store::packed(deps::encode_manifest(known.entries, known.context, known.let_go));
  }
  // The row once it commits (a failed commit leaves another, of another checksum).
  known.stored_row = util::checksum(row.value);
  took_in(known, known.stored_row);
  return row;
}

std::optional<std::string> Cache::Impl::stored_manifest_text(std::string_view manifest_key, util::Checksum* row)
{
  const auto bytes = store->get(store::Table::manifests, manifest_key);
  if (!bytes) {
    return std::nullopt;
  }
  if (row != nullptr) {
    *row = util::checksum(*bytes);
  }
  auto text = store::unpacked(*bytes);
  return text ? std::move(text) : std::optional<std::string>(std::string());  // "": a row that does not unpack
}

std::optional<deps::Manifest> Cache::Impl::stored_manifest(std::string_view manifest_key, const std::string& context,
                                                           util::Checksum* row, deps::LetGo* let_go)
{
  const auto text = stored_manifest_text(manifest_key, row);
  auto manifest = text ? deps::decode_manifest(*text, context, let_go) : std::nullopt;
  if (!manifest && text && let_go != nullptr) {
    *let_go = deps::LetGo{false, {}};  // whatever it let go is not known
  }
  return manifest;
}

std::optional<util::Checksum> Cache::Impl::stored_row_of(std::string_view manifest_key)
{
  std::optional<util::Checksum> sum;
  store->visit(store::Table::manifests, manifest_key, [&](std::string_view bytes) { sum = util::checksum(bytes); });
  return sum;
}

bool Cache::Impl::known_outdated(std::string_view manifest_key)
{
  const cache::OutdatedRow* known = cache::known_outdated_row();
  return known != nullptr && store && manifest_key == bytes_of(known->manifest_key) &&
         stored_row_of(manifest_key) == known->row;
}

bool Cache::Impl::is_provisional(const util::Sha256& key)
{
  if (!manifests.any_provisional.load(std::memory_order_acquire)) {
    return false;
  }
  std::lock_guard lock(manifests.mutex);
  return manifests.provisional.count(key) != 0;
}

std::optional<deps::Resolution> Cache::Impl::valid_manifest(const util::Sha256& manifest_key, const std::string& context,
                                                            bool* outdated, util::Checksum* outdated_row)
{
  std::optional<cache::KnownManifest> known;
  {
    std::lock_guard lock(manifests.mutex);
    if (const auto it = manifests.known.find(manifest_key); it != manifests.known.end() && it->second.context == context) {
      known = it->second;
    }
  }
  if (known && known->packed_whole) {
    if (deps::Resolution& newest = known->entries.front(); counted_validate(newest, statistics) == deps::Validation::unchanged) {
      return newest;
    }
    // The rest from its packed row when the store's row is this copy; else (another Cache or
    // process stored since, or its commit failed) it is decoded whole and checked first, as any
    // copy, then the store's row (found by a review: read the other way round, a state of the row
    // that held replaced this copy, and the state its failed commit held was lost).
    if (known->stored_row != util::Checksum{} && store && stored_row_of(bytes_of(manifest_key)) == known->stored_row) {
      if (known_outdated(bytes_of(manifest_key))) {
        if (outdated != nullptr) {
          *outdated = true;
        }
        return std::nullopt;  // the lookup that compiles ahead found this row so just before
      }
      auto found = valid_packed(manifest_key, *known, outdated);
      if (!found && outdated != nullptr && *outdated && outdated_row != nullptr) {
        *outdated_row = known->stored_row;
      }
      return found;
    }
    materialize(*known);
  }
  if (known && known->partial) {
    if (deps::Resolution& newest = known->entries.front(); counted_validate(newest, statistics) == deps::Validation::unchanged) {
      return newest;
    }
  } else if (known) {
    if (auto found = valid_entry(manifest_key, *known, false, outdated)) {
      return found;
    }
    // The store's row is the copy just checked (this Cache stored it): nothing more to read.
    if (known->stored_row != util::Checksum{} && store && stored_row_of(bytes_of(manifest_key)) == known->stored_row) {
      if (outdated != nullptr && *outdated && outdated_row != nullptr) {
        *outdated_row = known->stored_row;
      }
      return std::nullopt;
    }
  }
  if (known_outdated(bytes_of(manifest_key))) {
    if (outdated != nullptr) {
      *outdated = true;
    }
    return std::nullopt;  // the lookup that compiles ahead found this row so just before
  }
  // None in memory, or this process's copy holds no more: the store's may hold the state on disk
  // now, stored by another Cache or process since, which a long-lived Cache would otherwise
  // compile again.
  // Read an entry at a time: a hit on the newest decodes that one alone.
  util::Checksum row{};
  const auto text = store ? stored_manifest_text(bytes_of(manifest_key), &row) : std::nullopt;
  std::optional<deps::ManifestReader> reader;
  if (text) {
    reader.emplace(*text, context);
  }
  if (!reader || !reader->ok()) {
    return std::nullopt;
  }
  cache::KnownManifest manifest;
  manifest.context = context;
  manifest.stored_row = row;
  manifest.let_go = reader->take_let_go();
  if (known) {
    // This Cache's copy no longer serves: the store's, read whole, replaces it if it does (else
    // every later lookup here checked the copy first, and read the store's again).
    while (auto entry = reader->next()) {
      manifest.entries.push_back(std::move(*entry));
    }
  }
  auto found = valid_entry(manifest_key, manifest, true, outdated, &*reader);
  if (!found && outdated != nullptr && *outdated && outdated_row != nullptr) {
    *outdated_row = row;
  }
  return found;
}

std::optional<deps::Resolution> Cache::Impl::valid_packed(const util::Sha256& manifest_key, const cache::KnownManifest& copy,
                                                          bool* outdated)
{
  // Read an entry at a time from its packed row (its newest first: it was checked, but a
  // header changed since may have changed back).
  const auto text = store::unpacked(*copy.packed_whole);
  std::optional<deps::ManifestReader> reader;
  if (text) {
    reader.emplace(*text, copy.context);
  }
  if (!reader || !reader->ok()) {
    return std::nullopt;
  }
  cache::KnownManifest whole = copy;
  whole.entries.clear();
  whole.packed_whole.reset();
  whole.let_go = reader->take_let_go();
  return valid_entry(manifest_key, whole, false, outdated, &*reader);
}

std::optional<deps::Resolution> Cache::Impl::valid_entry(const util::Sha256& manifest_key, cache::KnownManifest& manifest,
                                                         bool from_store, bool* outdated, deps::ManifestReader* rest)
{
  // The headers found changed so far: an entry of `rest` that lists one with other content is
  // passed over, not decoded (deps::ManifestReader::skip_changed()).
  std::vector<deps::ChangedHeader> changed;
  std::vector<std::size_t> places(manifest.entries.size());  // each entry's place, past those passed over
  std::iota(places.begin(), places.end(), std::size_t{0});
  std::size_t passed_over = 0;
  // One more entry from `rest`; false at its end, or where it does not decode.
  const auto read_more = [&] {
    while (rest != nullptr && rest->skip_changed(changed)) {
      ++passed_over;
    }
    auto more = rest != nullptr ? rest->next() : std::nullopt;
    if (more) {
      places.push_back(manifest.entries.size() + passed_over);
      manifest.entries.push_back(std::move(*more));
    }
    return more.has_value();
  };
  std::size_t headers_changed = 0;
  for (std::size_t i = 0; i < manifest.entries.size() || read_more(); ++i) {
    deps::ChangedHeader header;
    const deps::Validation validation = counted_validate(manifest.entries[i], statistics, &header);
    if (!deps::holds(validation)) {
      if (validation == deps::Validation::headers_changed) {
        ++headers_changed;
        if (std::none_of(changed.begin(), changed.end(), [&](const auto& known) { return known.path == header.path; })) {
          changed.push_back(std::move(header));
        }
      }
      continue;
    }
    if (validation == deps::Validation::same_content || i != 0) {
      // Newest matching entry first, with the stamps seen now: the next check is stats only.
      deps::Resolution found = manifest.entries[i];
      changed.clear();  // the rest is read whole, to be stored
      if (passed_over != 0) {
        // So are the entries passed over, in their places.
        deps::Manifest whole;
        rest->rewind();
        for (std::size_t read = 0; !rest->at_end();) {
          if (read < places.size() && places[read] == whole.size()) {
            if (!rest->pass_over()) {
              break;
            }
            whole.push_back(std::move(manifest.entries[read++]));
          } else if (auto entry = rest->next()) {
            whole.push_back(std::move(*entry));
          } else {
            break;
          }
        }
        if (!rest->ok() || places[i] >= whole.size()) {
          return std::nullopt;  // damaged after all: resolved again
        }
        i = places[i];
        manifest.entries = std::move(whole);
      }
      while (read_more()) {
      }
      if (rest != nullptr && !rest->ok()) {
        return std::nullopt;  // damaged after all: resolved again
      }
      manifest.entries.erase(manifest.entries.begin() + static_cast<std::ptrdiff_t>(i));
      if (!from_store) {
        // This Cache's copy, stored over the store's row: that row's states stored since (by
        // another Cache or process) stay (found by a review: a hit on an older state of a copy
        // lost them, and they were compiled again).
        util::Checksum row{};
        merge_stored_row(manifest_key, manifest, &row);
      }
      manifest.entries.insert(manifest.entries.begin(), found);
      deps::let_go_of_oldest(manifest.entries, manifest.let_go);
      save_manifest(manifest_key, manifest, true);
      return found;
    }
    if (from_store) {
      // Whole, this Cache's copy from now on; else its newest entry alone, read again whole when
      // it no longer serves (a long-lived Cache's next lookups stat its headers, as before).
      cache::KnownManifest kept = manifest;
      kept.partial = rest != nullptr && !rest->at_end();
      std::lock_guard lock(manifests.mutex);
      keep_known(manifest_key, kept);
    }
    return manifest.entries[i];
  }
  if (rest != nullptr && !rest->ok()) {
    return std::nullopt;  // damaged: resolved again
  }
  if (outdated != nullptr) {
    // Every entry's headers changed: a search can't find any of them again (a folder that changed
    // alone may well lead to the same headers, and so to an entry the prediction finds). A full
    // manifest let older states go: outdated only if none of them may hold either (a JIT cycling a
    // header through nine values would compile every one, every time; a project's edit loop past
    // its eighth edit predicted every header before NVRTC, 0.5 s for a vendored CCCL).
    const std::size_t entries = manifest.entries.size() + passed_over;
    *outdated = entries != 0 && headers_changed + passed_over == entries &&
                (entries < deps::k_manifest_entries || !deps::let_go_may_hold(manifest.let_go));
  }
  return std::nullopt;
}

std::vector<std::string> Cache::Impl::manifest_changes(const util::Sha256& manifest_key, const std::string& context)
{
  std::optional<deps::Manifest> manifest;
  {
    std::lock_guard lock(manifests.mutex);
    if (const auto it = manifests.known.find(manifest_key); it != manifests.known.end() && it->second.context == context) {
      manifest = it->second.entries;
    }
  }
  if (!manifest && store) {
    manifest = stored_manifest(bytes_of(manifest_key), context);
  }
  if (!manifest || manifest->empty()) {
    std::string where;
    for (std::size_t at = 0, end; at < context.size(); at = end + 1) {
      end = context.find('\n', at);
      end = end == std::string::npos ? context.size() : end;
      if (context.compare(at, 11, "toolkit-dir") != 0) {
        where += (where.empty() ? "" : ", ") + context.substr(at, end - at);
      }
    }
    return {"no manifest made in this resolution context (" + where + ")"};
  }
  std::vector<std::string> out;
  const deps::Resolution& newest = manifest->front();
  for (const deps::ProbedDir& dir : newest.dirs) {
    if (deps::folder_changed(dir, deps::stamp_of(dir.path))) {
      out.push_back("folder " + dir.path + " changed (a file appeared, vanished or was renamed there)");
    }
  }
  for (const deps::DiskHeader& header : newest.headers) {
    const deps::FileStamp now = deps::stamp_of(header.path);
    if (now == header.stamp) {
      continue;
    }
    std::error_code error;
    const auto content = now.exists ? util::read_file(header.path, error) : std::nullopt;
    if (!content) {
      out.push_back("include " + header.name + " (" + header.path + ") removed");
    } else if (util::sha256(*content) != header.hash) {
      out.push_back("include " + header.name + " (" + header.path + ") changed");
    }
  }
  return out;
}

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
  took_in(copy, *row);
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
  materialize(updated);  // (on the thread that prepares a miss compiled ahead, beside NVRTC)
  if (updated.entries.empty() && store) {
    updated.version = 0;  // the store's, or none
    updated.let_go = {};
    util::Checksum base{};
    if (auto decoded = stored_manifest(bytes_of(manifest_key), context, &base, &updated.let_go)) {
      updated.entries = std::move(*decoded);
      updated.rows.clear();
      took_in(updated, base);
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
  cache::PackedManifest ahead{manifest_key, context, 0, {}, entry_digest(recorded), {}, {}};
  const cache::KnownManifest updated = manifest_with(manifest_key, context, std::move(recorded), &ahead.stored_row);
  ahead.version = updated.version;
  ahead.rows = updated.rows;
  ahead.packed = store::packed(deps::encode_manifest(updated.entries, updated.context, updated.let_go));
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
