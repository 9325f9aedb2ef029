// Manifests in use: a warm lookup stats the headers a manifest lists instead of compiling to learn them.
#include "cache/cache_impl.hpp"

#include "cache/entry_leads.hpp"
#include "deps/manifest_head.hpp"

#include "store/compress.hpp"
#include "util/file.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <string_view>
#include <utility>
#include <vector>

namespace kjit {

namespace {

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

// Whether the folders of `entry` in `elided`, whose absent names it lacks (a manifest head's:
// deps/manifest_head.hpp), have their stamps as recorded (validate() asks no name it does not have).
bool elided_as_recorded(const deps::Resolution& entry, const std::set<std::string>& elided)
{
  return elided.empty() || std::all_of(entry.dirs.begin(), entry.dirs.end(), [&](const deps::ProbedDir& dir) {
           return elided.count(dir.path) == 0 || deps::stamp_of(dir.path) == dir.stamp;
         });
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
    cache::took_in(kept, kept.stored_row);
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
    auto head = head_row(manifest_key, manifest, value);
    std::vector<store::Store::Row> rows{{store::Table::manifests, std::string(bytes_of(manifest_key)), std::move(value)}};
    if (head) {
      rows.push_back(std::move(*head));
    }
    store->put(rows);
  }
}

std::optional<store::Store::Row> Cache::Impl::head_row(const util::Sha256& manifest_key, const cache::KnownManifest& manifest,
                                                       const std::string& row)
{
  store::Store::Row head{store::Table::manifests, cache::manifest_head_key(bytes_of(manifest_key)), {}};
  if (manifest.packed_whole) {
    if (!manifest.packed_head || manifest.packed_head->empty() || *manifest.packed_whole != row) {
      return std::nullopt;  // (a head made with another row is never taken: its checksum differs)
    }
    head.value = *manifest.packed_head;
  } else if (!manifest.partial && !manifest.entries.empty()) {
    head.value = store::packed(deps::encode_manifest_head(manifest.entries, manifest.context, manifest.let_go,
                                                          util::checksum(row)));
  } else {
    return std::nullopt;
  }
  return head;
}

void Cache::Impl::keep_known(const util::Sha256& manifest_key, const cache::KnownManifest& manifest)
{
  cache::KnownManifest& kept = manifests.known[manifest_key] = manifest;
  cache::took_in(kept, kept.stored_row);
  kept.version = manifests.next_version++;
  manifests.packed.erase(manifest_key);  // made from another copy
}

std::vector<store::Store::Row> Cache::Impl::take_unsaved_manifest(const PreparedProgram& prepared)
{
  const util::Sha256 manifest_key = prepared.m_manifest_key;
  std::lock_guard lock(manifests.mutex);
  if (manifests.unsaved.erase(manifest_key) == 0) {
    return {};
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
  cache::took_in(known, known.stored_row);
  std::vector<store::Store::Row> rows;
  auto head = head_row(manifest_key, known, row.value);
  rows.push_back(std::move(row));
  if (head) {
    rows.push_back(std::move(*head));
  }
  return rows;
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
  if (known && (known->partial || known->packed_whole)) {
    // Its newest entry alone is at hand: served while it holds unchanged.
    if (deps::Resolution& newest = known->entries.front();
        counted_validate(newest, statistics) == deps::Validation::unchanged && elided_as_recorded(newest, known->elided_dirs)) {
      return newest;
    }
  }
  if (known && known->packed_whole) {
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
    cache::materialize(*known);
  }
  if (known && !known->partial) {
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
  // None in memory: the store's head of it decides where it can (a hit on its newest entry, an
  // edit every entry read otherwise), without the manifest's text.
  if (!known && store) {
    bool decided = false;
    auto found = valid_head(manifest_key, context, outdated, outdated_row, decided);
    if (decided) {
      return found;
    }
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

std::optional<deps::Resolution> Cache::Impl::valid_head(const util::Sha256& manifest_key, const std::string& context,
                                                         bool* outdated, util::Checksum* outdated_row, bool& decided)
{
  decided = false;
  const auto packed = store->get(store::Table::manifests, cache::manifest_head_key(bytes_of(manifest_key)));
  const auto row = packed ? stored_row_of(bytes_of(manifest_key)) : std::nullopt;
  const auto text = row ? store::unpacked(*packed) : std::nullopt;
  auto head = text ? deps::decode_manifest_head(*text, context, *row) : std::nullopt;
  if (!head) {
    return std::nullopt;  // none, damaged, or of another row (one written without its head)
  }
  // The folders whose absent names the head left out are compared by their stamps alone: any
  // change there reads the manifest, which asks their names.
  deps::Resolution& newest = head->newest;
  deps::ChangedHeader changed;
  const deps::Validation validation = counted_validate(newest, statistics, &changed);
  const auto elided_unchanged = [&] { return elided_as_recorded(newest, head->elided_dirs); };
  if (validation == deps::Validation::unchanged) {
    if (elided_unchanged()) {
      decided = true;
      // Kept as the full path keeps the newest entry it read alone (KnownManifest::partial), with
      // the folders whose names are not here (a change there reads the row).
      cache::KnownManifest kept;
      kept.context = context;
      kept.stored_row = *row;
      kept.partial = true;
      kept.elided_dirs = head->elided_dirs;
      kept.entries.push_back(newest);
      std::lock_guard lock(manifests.mutex);
      keep_known(manifest_key, kept);
      return std::move(newest);
    }
    return std::nullopt;
  }
  if (validation == deps::Validation::same_content) {
    // A header touched, its content the same: stored with its new stamp, as valid_entry() does,
    // the manifest read whole (not validated again: its header hashed twice). Its left-out folders
    // as recorded first (a review: a touch beside a file that shadows a header in one of them was
    // served the old entry).
    return elided_unchanged() ? with_new_stamps(manifest_key, context, *row, newest, decided) : std::nullopt;
  }
  // As valid_entry() reads the manifest: the newest's header changed, and every other entry read
  // it otherwise (ManifestReader::skip_changed()); a full manifest is outdated only if no state
  // it let go may hold.
  if (validation == deps::Validation::headers_changed && deps::others_read_otherwise(*head, changed.path, changed.now) &&
      (head->others.size() + 1 < deps::k_manifest_entries || !deps::let_go_may_hold(head->let_go))) {
    decided = true;
    if (outdated != nullptr) {
      *outdated = true;
      if (outdated_row != nullptr) {
        *outdated_row = *row;
      }
    }
  }
  return std::nullopt;
}

std::optional<deps::Resolution> Cache::Impl::with_new_stamps(const util::Sha256& manifest_key, const std::string& context,
                                                              const util::Checksum& row, const deps::Resolution& validated,
                                                              bool& decided)
{
  cache::KnownManifest manifest;
  manifest.context = context;
  util::Checksum read{};
  auto entries = stored_manifest(bytes_of(manifest_key), context, &read, &manifest.let_go);
  if (!entries || entries->empty() || read != row) {
    return std::nullopt;  // (damaged, or stored again since: undecided)
  }
  std::map<std::string_view, const deps::FileStamp*> stamps;
  for (const deps::DiskHeader& header : validated.headers) {
    stamps.emplace(header.path, &header.stamp);
  }
  deps::Resolution& newest = entries->front();
  for (deps::DiskHeader& header : newest.headers) {
    if (const auto it = stamps.find(header.path); it != stamps.end()) {
      header.stamp = *it->second;
    }
  }
  manifest.entries = std::move(*entries);
  manifest.stored_row = row;
  cache::took_in(manifest, row);
  save_manifest(manifest_key, manifest, true);
  decided = true;
  return manifest.entries.front();
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
  whole.packed_head.reset();
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
        merge_stored_row(manifest_key, manifest);
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

} // namespace kjit
