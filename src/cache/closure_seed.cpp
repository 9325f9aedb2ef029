// A miss of a program whose other arch (or other name expressions) was compiled, or of another
// program of the same library: its headers are taken from that compile's closed resolution
// instead of being predicted and closed again (docs/includes.md, "A closure used again").
#include "cache/cache_impl.hpp"

#include "deps/header_edit.hpp"
#include "rtc/option_spelling.hpp"
#include "rtc/toolkit.hpp"
#include "store/blobs.hpp"
#include "store/meta_keys.hpp"
#include "store/record.hpp"
#include "util/file.hpp"
#include "util/text.hpp"

#include <algorithm>
#include <optional>
#include <set>
#include <sstream>

namespace kjit {

namespace {

// Fills each header's content from the disk, after deps::validate() found every stamp as recorded:
// the stamp after the read as recorded (a change since validate() moves its ctime), and, for a
// stamp too new to stand for its content (an edit within its tick keeps it), the bytes hashing as
// recorded. A settled stamp stands for its content as it does for a hit's: a vendored CCCL's
// 1 691 headers, 20 MB, were hashed again beside NVRTC on every edit's miss. False when one
// differs (the seed is not used: the headers are predicted).
bool read_contents(deps::Resolution& resolution)
{
  const std::int64_t start = deps::stamp_clock_ns();  // before any read: a change after it is stamped later
  for (deps::DiskHeader& header : resolution.headers) {
    std::error_code error;
    auto content = util::read_file(header.path, error);
    if (!content || !(deps::stamp_of(header.path) == header.stamp) ||
        (deps::too_new(header.stamp, start) && util::sha256(*content) != header.hash)) {
      return false;
    }
    header.content = std::move(*content);
  }
  return true;
}

// At most this many headers edited since a closure was made are taken into it (a save touches one
// or two; a branch checked out touches many: their headers are predicted).
constexpr int k_edits_taken = 4;

// Takes the headers of `resolution` edited since it was recorded into it, when each edit keeps its
// closure (deps::edit_keeps_closure(), the text before read from its blob in `store`): their
// hashes and stamps as they are now. `macros` gets the macros the edits define differently.
// False when a header is gone, too new or edited past k_edits_taken, when a blob is not there,
// or when an edit may change the closure.
bool take_edits(const store::Store& store, deps::Resolution& resolution, std::set<std::string>& macros,
                std::size_t& stats)
{
  for (int taken = 0;; ++taken) {
    deps::ValidationCounters counters;
    deps::ChangedHeader changed;
    const deps::Validation validation = deps::validate(resolution, counters, &changed);
    stats += counters.stats;
    if (deps::holds(validation)) {
      return true;
    }
    if (validation != deps::Validation::headers_changed || !changed.now || taken == k_edits_taken) {
      return false;
    }
    const auto header = std::find_if(resolution.headers.begin(), resolution.headers.end(),
                                     [&](const deps::DiskHeader& h) { return h.path == changed.path; });
    const auto blob = store.get(store::Table::blobs, store::blob_key(header->hash));
    std::string why;
    const auto before = blob ? store::decode_blob(*blob, header->hash, why) : std::nullopt;
    const deps::FileStamp stamp = deps::stamp_of(header->path);
    std::error_code error;
    const auto after = util::read_file(header->path, error);
    if (!before || !after || util::sha256(*after) != *changed.now || !deps::edit_keeps_closure(*before, *after, macros)) {
      return false;
    }
    header->hash = *changed.now;
    header->stamp = stamp;  // (read_contents() reads it again: a change since moves it)
  }
}

// Whether a macro an edit defines differently is named where its value may count in a text of
// the closure or in the source (deps::names_in_a_directive()).
bool macros_named(const std::set<std::string>& macros, const deps::Resolution& resolution, const Program& program)
{
  for (const std::string& macro : macros) {
    if (deps::names_in_a_directive(program.source, macro) ||
        std::any_of(resolution.headers.begin(), resolution.headers.end(),
                    [&](const deps::DiskHeader& h) { return deps::names_in_a_directive(h.content, macro); })) {
      return true;
    }
  }
  return false;
}

constexpr std::string_view k_library_magic = "kjit-closure-library 1";

// Where a closure is, for a library (its row) or a program (its seed's row): the manifest (and its
// context) of the program that closed it, that program's seed key, and, for a library, its source's
// #include directives (deps::source_directives()).
struct LibraryRow {
  std::string manifest_key;  // raw bytes
  std::string context;
  util::Sha256 seed{};
  std::set<std::string> directives;
};

std::string library_row_key(const util::Sha256& library)
{
  return std::string(store::k_closure_library_prefix) + util::to_hex(library);
}

std::string seed_row_key(const util::Sha256& seed)
{
  return std::string(store::k_closure_seed_prefix) + util::to_hex(seed);
}

std::string encode_library_row(const LibraryRow& row)
{
  std::string out = std::string(k_library_magic) + "\nmanifest " + util::to_hex(util::digest_of_bytes(row.manifest_key)) +
                    "\ncontext " + util::escape_line(row.context) + "\nseed " + util::to_hex(row.seed) + "\n";
  for (const auto& directive : row.directives) {
    out += "directive " + util::escape_line(directive) + "\n";
  }
  return out;
}

std::optional<LibraryRow> decode_library_row(const std::string& text)
{
  std::istringstream lines(text);
  std::string line;
  LibraryRow row;
  if (!std::getline(lines, line) || line != k_library_magic) {
    return std::nullopt;
  }
  util::Sha256 manifest{};
  bool have_manifest = false;
  bool have_seed = false;
  bool have_context = false;
  while (std::getline(lines, line)) {
    const auto space = line.find(' ');
    const std::string kind = line.substr(0, space);
    const std::string rest = space == std::string::npos ? std::string() : line.substr(space + 1);
    if (kind == "manifest") {
      have_manifest = util::from_hex(rest, manifest);
    } else if (kind == "seed") {
      have_seed = util::from_hex(rest, row.seed);
    } else if (kind == "context") {
      have_context = true;
      row.context = util::unescape_line(rest);
    } else if (kind == "directive") {
      row.directives.insert(util::unescape_line(rest));
    } else {
      return std::nullopt;
    }
  }
  if (!have_manifest || !have_seed || !have_context) {
    return std::nullopt;
  }
  row.manifest_key = std::string(bytes_of(manifest));
  return row;
}

} // namespace

util::Sha256 Cache::Impl::closure_seed_key(const Program& program, const deps::SearchContext& search)
{
  return deps::seed_key(program, search, toolchain_text());
}

std::string Cache::Impl::toolchain_text()
{
  const cache::KeyContext& context = key_context();
  return context.nvrtc_identity + "\n" + context.toolkit_headers.value();
}

void Cache::Impl::offer_closure(const Program& program, const deps::SearchContext& search,
                                const util::Sha256& manifest_key, deps::Resolver& resolver)
{
  const util::Sha256 seed = closure_seed_key(program, search);
  if (seed == util::Sha256{} || !resolver.result().recordable) {
    return;
  }
  resolver.result().closure = resolver.closure_state(seed);
  if (!store || !store->writable()) {
    return;  // no row to leave (persist() stores nothing): the map would only grow
  }
  // This program's own row: its other archs (and other name expressions) start from here.
  std::vector<std::pair<std::string, std::string>> rows;
  rows.emplace_back(seed_row_key(seed), encode_library_row({std::string(bytes_of(manifest_key)), search.text(), seed, {}}));
  // The library's row, unless this closure was another program's (the library's row stays).
  if (const auto directives = resolver.seeded() ? std::nullopt : deps::source_directives(program)) {
    const LibraryRow row{std::string(bytes_of(manifest_key)), search.text(), seed, *directives};
    const util::Sha256 library = deps::library_key(program, search, toolchain_text());
    rows.emplace_back(library_row_key(library), encode_library_row(row));
  }
  std::lock_guard lock(manifests.mutex);
  manifests.closure_rows[manifest_key] = std::move(rows);
}

std::vector<store::Store::Row> Cache::Impl::take_closure_rows(const PreparedProgram& prepared)
{
  std::vector<store::Store::Row> rows;
  std::lock_guard lock(manifests.mutex);
  const auto it = manifests.closure_rows.find(prepared.m_manifest_key);
  if (it == manifests.closure_rows.end()) {
    return rows;
  }
  for (auto& [key, value] : it->second) {
    rows.push_back({store::Table::meta, std::move(key), std::move(value)});
  }
  manifests.closure_rows.erase(it);
  return rows;
}

std::shared_ptr<deps::Resolver> Cache::Impl::predicted_resolver(const Program& program, const deps::SearchContext& search,
                                                                bool may_seed)
{
  // Another arch of this program (or its other name expressions) closed a resolution that still
  // holds: compiled from it, not predicted again (docs/includes.md).
  if (auto resolver = may_seed ? seeded_resolver(program, search) : nullptr) {
    return resolver;
  }
  auto resolver = std::make_shared<deps::Resolver>(program, search);
  resolver->predict();
  return resolver;
}

std::shared_ptr<deps::Resolver> Cache::Impl::prediction_ahead(const Program& given)
{
  std::optional<Program> storage;
  const Program& program = rtc::as_nvrtc_reads(given, storage);
  const deps::SearchContext search = deps::search_context(program, rtc::toolkit_for(config).include_dirs);
  // A seed is found by the toolchain's key text: not asked before the key context is made (on a
  // new toolchain it waits for the compile's PTX, and no closure made with another can fit).
  bool made = false;
  {
    std::lock_guard lock(context_mutex);
    made = context.has_value();
  }
  return predicted_resolver(program, search, made);
}

std::shared_ptr<deps::Resolver> Cache::Impl::seeded_resolver(const Program& program, const deps::SearchContext& search)
{
  // A store without entries holds no closure (a closure is a manifest's, which goes with its last
  // entry): nothing is asked of the key context, which on a new store waits for NVRTC's build.
  if (!store || store->count(store::Table::entries) == 0) {
    return nullptr;
  }
  const util::Sha256 seed = closure_seed_key(program, search);
  if (seed == util::Sha256{}) {
    return nullptr;
  }
  // The program's own closure (another arch, other name expressions): the manifest its seed's row
  // names, one row and one manifest however many programs share its name (a JIT's variants of one
  // source by -D: a vendored CCCL's manifests are 2.8 MB of text each).
  std::string own_manifest;
  if (const auto bytes = store->get(store::Table::meta, seed_row_key(seed))) {
    if (const auto own = decode_library_row(*bytes); own && own->seed == seed) {
      own_manifest = own->manifest_key;
      if (auto resolver = seeded_from(program, search, own->manifest_key, own->context, seed, nullptr)) {
        return resolver;
      }
    }
  }
  // Another program of its library: the closure the library's row names, if this source fits it.
  const auto bytes = store->get(store::Table::meta, library_row_key(deps::library_key(program, search, toolchain_text())));
  const auto row = bytes ? decode_library_row(*bytes) : std::nullopt;
  if (!row || row->manifest_key == own_manifest) {
    return nullptr;
  }
  return seeded_from(program, search, row->manifest_key, row->context, row->seed, &row->directives);
}

std::shared_ptr<deps::Resolver> Cache::Impl::seeded_from(const Program& program, const deps::SearchContext& search,
                                                         const std::string& manifest_key, const std::string& context,
                                                         const util::Sha256& seed,
                                                         const std::set<std::string>* directives)
{
  // Each resolution there has a header whose content changed (the lookup found so): none holds,
  // and the newest is read alone, for the edits it may take.
  const bool outdated = known_outdated(manifest_key);
  if (outdated && directives != nullptr) {
    return nullptr;  // (another program's closure is taken as it was, or not at all)
  }
  std::optional<deps::Resolution> newest;  // the newest of this seed, for the edits since
  const auto matches = [&](const deps::Resolution& resolution) {
    return resolution.closure && resolution.closure->seed_key == seed &&
           (directives == nullptr || deps::fits_closure(program, *resolution.closure, *directives));
  };
  if (outdated) {
    const auto text = stored_manifest_text(manifest_key);
    std::optional<deps::ManifestReader> reader;
    if (text) {
      reader.emplace(*text, context);
    }
    while (reader && reader->ok() && !newest) {
      auto resolution = reader->next();
      if (!resolution) {
        break;
      }
      if (matches(*resolution)) {
        newest = std::move(resolution);
      }
    }
  } else {
    auto manifest = stored_manifest(manifest_key, context);
    for (deps::Resolution& resolution : manifest ? *manifest : deps::Manifest{}) {
      if (!matches(resolution)) {
        continue;
      }
      if (!newest) {
        newest = resolution;  // (before validate() updates its stamps)
      }
      deps::ValidationCounters counters;
      if (!deps::holds(deps::validate(resolution, counters)) || !read_contents(resolution)) {
        continue;
      }
      statistics.update([&](CacheStats& stats) { stats.header_stats += counters.stats; });
      return std::make_shared<deps::Resolver>(program, search, std::move(resolution));
    }
  }
  // None holds: the program's own newest closure, with the headers edited since when each edit
  // keeps it (docs/includes.md, "An edit that keeps the closure").
  std::set<std::string> macros;
  std::size_t stats = 0;
  if (!newest || directives != nullptr || !take_edits(*store, *newest, macros, stats) || !read_contents(*newest) ||
      macros_named(macros, *newest, program)) {
    return nullptr;
  }
  statistics.update([&](CacheStats& s) { s.header_stats += stats; });
  return std::make_shared<deps::Resolver>(program, search, std::move(*newest));
}

} // namespace kjit
