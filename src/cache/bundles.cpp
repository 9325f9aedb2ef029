// kjit export / import: the store's entries to a bundle file and back, every entry verified.
#include "cache/cache_impl.hpp"

#include "bundle/reader.hpp"
#include "bundle/writer.hpp"
#include "store/store.hpp"
#include "mirror/mirror.hpp"
#include "store/record.hpp"

#include <cerrno>

namespace kjit {

namespace {

std::string hex_of(std::string_view raw)
{
  return util::to_hex(reinterpret_cast<const std::uint8_t*>(raw.data()), raw.size());
}

bool is_toolchain_row(std::string_view key)
{
  return key.substr(0, 10) == "toolchain ";
}

} // namespace

BundleReport Cache::export_bundle(const std::string& path, const EntryFilter& filter)
{
  BundleReport report;
  std::vector<bundle::Record> records;
  std::vector<bundle::MetaRow> meta;
  if (m_impl->store) {
    m_impl->store->for_each(store::Table::entries, [&](std::string_view key, std::string_view bytes) {
      std::string why;
      const auto entry = store::decode_record(bytes, util::digest_of_bytes(key), store::Sections::all, why);
      if (!entry) {
        ++report.skipped_damaged;
      } else if (cache::entry_matches(filter, *entry)) {
        records.push_back({util::digest_of_bytes(key), std::string(bytes)});
      }
    });
    std::vector<std::string> meta_keys;
    m_impl->store->for_each(store::Table::meta, [&](std::string_view key, std::string_view) {
      if (is_toolchain_row(key)) {
        meta_keys.emplace_back(key);
      }
    });
    for (std::string& key : meta_keys) {
      // Through get(): the value as the store hands it out (checked, in the store's own encoding).
      if (auto value = m_impl->store->get(store::Table::meta, key)) {
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
  std::vector<std::pair<std::string, store::Entry>> mirrored;
  for (const bundle::IndexEntry& index : reader.index()) {
    const std::string hex = util::to_hex(index.key);
    std::string bytes = reader.read(index);
    std::string why;
    auto entry = store::decode_record(bytes, index.key, store::Sections::all, why);
    if (!entry) {
      report.rejected.emplace_back(hex, why);
      continue;
    }
    bool present = false;
    m_impl->store->visit(store::Table::entries, bytes_of(index.key), [&](std::string_view existing) {
      std::string ignored;
      present = store::decode_record(existing, index.key, store::Sections::all, ignored).has_value();
    });
    if (present) {
      ++report.already_present;
      continue;
    }
    rows.push_back({store::Table::entries, std::string(bytes_of(index.key)), std::move(bytes)});
    rows.push_back({store::Table::names, store::names_key(entry->program_name, bytes_of(index.key)), entry->program_name});
    mirrored.emplace_back(hex, std::move(*entry));
    ++report.entries;
  }
  for (const bundle::MetaRow& row : reader.meta()) {
    if (is_toolchain_row(row.key) && !m_impl->store->get(store::Table::meta, row.key)) {
      rows.push_back({store::Table::meta, row.key, row.value});
    }
  }
  m_impl->store->put(rows);  // one transaction: all of the import or none of it
  if (m_impl->config.mirror && m_impl->dir.writable) {
    for (const auto& [hex, entry] : mirrored) {
      if (mirror::write_entry(m_impl->dir.path, hex, entry)) {
        m_impl->count(&CacheStats::mirror_errors);
      }
    }
  }
  return report;
}

} // namespace kjit
