// kjit export / import: the store's entries to a bundle file and back, every entry verified.
#include "cache/cache_impl.hpp"
#include "cache/toolchain.hpp"

#include "bundle/reader.hpp"
#include "bundle/writer.hpp"
#include "store/meta_keys.hpp"
#include "store/script_record.hpp"
#include "store/store.hpp"
#include "store/blobs.hpp"
#include "store/record.hpp"

#include <cerrno>
#include <numeric>

namespace kjit {

BundleReport Cache::export_bundle(const std::string& path, const EntryFilter& filter)
{
  BundleReport report;
  std::vector<bundle::Record> records;
  std::vector<bundle::MetaRow> meta;
  if (m_impl->store) {
    // Keys first: the headers are read from their blobs outside the walk. A bundle's records hold
    // their headers inline, so each one stands alone.
    std::vector<std::string> keys;
    m_impl->store->for_each(store::Table::entries, [&](std::string_view key, std::string_view) { keys.emplace_back(key); });
    cache::run_listed_keys_hook();
    for (const std::string& key : keys) {
      const util::Sha256 digest = util::digest_of_bytes(key);
      const auto bytes = m_impl->store->get(store::Table::entries, key);
      if (!bytes) {
        continue;  // removed since the listing (another process's prune): not damage
      }
      std::string why;
      auto entry = store::decode_record(*bytes, digest, store::Sections::all, why);
      if (entry && !cache::entry_matches(filter, *entry)) {
        continue;
      }
      const bool headers = entry && store::load_headers(*m_impl->store, *entry, why);
      if (entry && !headers && !m_impl->store->get(store::Table::entries, key)) {
        continue;  // its blobs went with it meanwhile
      }
      if (!headers) {
        ++report.skipped_damaged;
        continue;
      }
      records.push_back({digest, store::encode_record(*entry, digest, store::HeaderStorage::inline_content)});
    }
    if (m_impl->store->writable()) {
      cache::remember_build_memo(m_impl->config, *m_impl->store);  // another machine's versions row
    }
    std::vector<std::string> meta_keys;
    m_impl->store->for_each(store::Table::meta, [&](std::string_view key, std::string_view) {
      if (store::travels_in_bundles(key)) {
        meta_keys.emplace_back(key);  // toolchains, scripts and their tables: store/meta_keys.hpp
      }
    });
    for (std::string& key : meta_keys) {
      // Through get(): the value as the store hands it out (checked, in the store's own encoding).
      if (auto value = m_impl->store->get(store::Table::meta, key)) {
        if (store::is_script_row(key)) {
          if (!script::script_row_problem(key, *value).empty()) {
            ++report.skipped_damaged;  // left out, as a damaged entry is
            continue;
          }
          ++report.scripts;
        }
        meta.push_back({std::move(key), std::move(*value)});
      }
    }
  }
  report.entries = records.size();
  bundle::write_bundle(path, std::move(records), meta, store::k_record_format);
  return report;
}

BundleReport Cache::import_bundle(const std::string& path)
{
  if (!m_impl->store) {
    throw StoreError("cannot import " + path + ": the disk cache is disabled", EINVAL);
  }
  if (!m_impl->store->writable()) {
    throw StoreError("cannot import " + path + ": the cache at " + m_impl->config.cache_dir + " is read-only", EROFS);
  }
  // The whole file first: a damaged or truncated bundle imports nothing.
  const bundle::Reader reader(path);
  reader.verify_data();

  BundleReport report;
  std::vector<store::Store::Row> rows;
  std::vector<std::pair<util::Sha256, store::Entry>> mirrored;
  for (const bundle::IndexEntry& index : reader.index()) {
    const std::string hex = util::to_hex(index.entry_key);
    std::string bytes = reader.read(index);
    std::string why;
    auto entry = store::decode_record(bytes, index.entry_key, store::Sections::all, why);
    if (!entry) {
      report.rejected.emplace_back(hex, why);
      continue;
    }
    bool present = false;
    m_impl->store->visit(store::Table::entries, bytes_of(index.entry_key), [&](std::string_view existing) {
      std::string ignored;
      present = store::decode_record(existing, index.entry_key, store::Sections::all, ignored).has_value();
    });
    if (present) {
      ++report.already_present;
      continue;
    }
    // Stored as the store keeps records: the headers as blobs, once.
    rows.push_back({store::Table::entries, std::string(bytes_of(index.entry_key)), store::encode_record(*entry, index.entry_key)});
    rows.push_back({store::Table::names, store::names_key(entry->program_name, bytes_of(index.entry_key)), entry->program_name});
    // Its record doesn't say what its key's program was (no program row): lookups of its name, and
    // of its source under any name (a project that moved), are not compiled ahead
    // (cache/speculation.cpp).
    rows.push_back({store::Table::meta, cache::unmarked_name_row(entry->program_name), "bundle"});
    try {
      rows.push_back({store::Table::meta, cache::source_row(entry->source, Arch::parse(entry->binary.arch)), "stored"});
    } catch (const Error&) {
      // an arch this kjit can't read: no lookup of it can be compiled ahead here anyway
    }
    store::add_header_rows(*entry, index.entry_key, rows);
    mirrored.emplace_back(index.entry_key, std::move(*entry));
    ++report.entries;
  }
  for (const bundle::MetaRow& row : reader.meta()) {
    if (!store::travels_in_bundles(row.key)) {
      continue;
    }
    const std::optional<std::string> existing = m_impl->store->get(store::Table::meta, row.key);
    if (!store::is_script_row(row.key)) {
      if (!existing) {
        rows.push_back({store::Table::meta, row.key, row.value});  // a toolchain's identity
      }
      continue;
    }
    // A script or table is checked as its reader will (decoded, its key's hash its own): a damaged
    // or foreign one is rejected, not stored to stand in the way of a good one. One the store has
    // and can read is left as it is (a table tuned here stays); one it can't read is replaced.
    if (std::string why = script::script_row_problem(row.key, row.value); !why.empty()) {
      report.rejected.emplace_back(row.key, why);
      continue;
    }
    if (!existing || !script::script_row_problem(row.key, *existing).empty()) {
      rows.push_back({store::Table::meta, row.key, row.value});
      ++report.scripts;
    }
  }
  std::size_t row_bytes = 0;  // what KJIT_MAX_SIZE counts, as a compile's write does (lookup.cpp)
  std::size_t blob_bound = 0;
  for (const store::Store::Row& row : rows) {
    row_bytes += row.table == store::Table::entries ? row.key.size() + row.value.size() : 0;
    blob_bound += row.table == store::Table::blobs ? cache::blob_growth_bound(row.key.size() + row.value.size()) : 0;
  }
  std::vector<std::size_t> guesses;
  for (const auto& [key, entry] : mirrored) {
    guesses.push_back(m_impl->mirror_guess(entry));
  }
  const std::size_t mirror_bytes = std::accumulate(guesses.begin(), guesses.end(), std::size_t{0});
  m_impl->add_to_count(rows, row_bytes + blob_bound + mirror_bytes);  // the store's count (size_limit.cpp)
  m_impl->store->put(rows);  // one transaction: all of the import or none of it
  for (std::size_t i = 0; i < mirrored.size(); ++i) {
    m_impl->mirror_entry(mirrored[i].first, mirrored[i].second, guesses[i]);
  }
  if (!mirrored.empty()) {
    m_impl->after_write(mirrored.front().first, row_bytes, blob_bound);  // an import is a write: KJIT_MAX_SIZE applies
  }
  return report;
}

} // namespace kjit
