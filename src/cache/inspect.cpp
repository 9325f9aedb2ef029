// Operating a cache folder: list, show, verify, prune, usage, mirror removal (the kjit commands' API).
#include "cache/cache_impl.hpp"
#include "cache/entry_leads.hpp"
#include "cache/entry_rows.hpp"

#include "cache/cache_dir.hpp"
#include "cache/usage_log.hpp"
#include "store/store.hpp"
#include "store/blobs.hpp"
#include "store/meta_keys.hpp"
#include "store/record.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <cerrno>
#include <ctime>

namespace kjit {

namespace {

EntryInfo info_of(std::string_view raw_key, std::size_t record_bytes, const store::Entry& entry)
{
  EntryInfo info;
  info.key = cache::hex_of(raw_key);
  info.program_name = entry.program_name;
  info.arch = entry.binary.arch;
  info.failed = entry.kind == store::EntryKind::failure;
  info.created_unix = entry.created_unix;
  info.record_bytes = record_bytes;
  info.cubin_bytes = entry.binary.cubin.size();
  info.ptx_bytes = entry.binary.ptx.size();
  info.source_bytes = entry.source.size();
  for (const store::HeaderRef& header : entry.header_refs) {
    info.source_bytes += header.size;
  }
  info.log_bytes = entry.binary.log.size();
  info.compile_ms = entry.binary.timings.total_ms;
  return info;
}

void require_writable(const Cache& cache)
{
  if (!cache.has_disk_tier()) {
    throw StoreError("no disk cache at " + cache.config().cache_dir + " (disabled, or its store could not be opened)",
                     ENOENT);
  }
  if (!cache.writable()) {
    throw StoreError("the cache at " + cache.config().cache_dir + " is read-only", EROFS);
  }
}

} // namespace

namespace cache {

// A program made from a file is named by the path it was given: "saxpy.cu" matches
// "/src/saxpy.cu" and "src/saxpy.cu" (a whole last component), never "my_saxpy.cu".
static bool name_matches(const std::string& wanted, const std::string& name)
{
  if (wanted.empty() || wanted == name) {
    return true;
  }
  return name.size() > wanted.size() && name.compare(name.size() - wanted.size(), wanted.size(), wanted) == 0 &&
         name[name.size() - wanted.size() - 1] == '/';
}

bool entry_matches(const EntryFilter& filter, const store::Entry& entry)
{
  return name_matches(filter.name, entry.program_name) &&
         (filter.arch.empty() || filter.arch == entry.binary.arch);
}

} // namespace cache

std::vector<EntryInfo> Cache::entries(const EntryFilter& filter) const
{
  std::vector<EntryInfo> out;
  for (const cache::Row& row : cache::decoded_rows(m_impl->store.get(), filter)) {
    out.push_back(info_of(row.raw_key, row.bytes, row.entry));
  }
  std::sort(out.begin(), out.end(), [](const EntryInfo& a, const EntryInfo& b) {
    return std::tie(a.program_name, a.arch, a.key) < std::tie(b.program_name, b.arch, b.key);
  });
  return out;
}

std::string Cache::resolve_key(const std::string& prefix) const
{
  if (prefix.empty() || prefix.size() > 64 || prefix.find_first_not_of("0123456789abcdef") != std::string::npos) {
    throw Error("'" + prefix + "' is not a key prefix (1 to 64 lowercase hex digits)");
  }
  std::vector<std::string> found;
  util::Sha256 whole{};
  if (m_impl->store && util::from_hex(prefix, whole)) {
    // A whole key (what `kjit compile` asks after a miss): its row, not a walk of every entry.
    if (m_impl->store->visit(store::Table::entries, bytes_of(whole), [](std::string_view) {})) {
      found.push_back(prefix);
    }
  } else if (m_impl->store) {
    m_impl->store->for_each(store::Table::entries, [&](std::string_view key, std::string_view) {
      std::string hex = cache::hex_of(key);
      if (hex.compare(0, prefix.size(), prefix) == 0) {
        found.push_back(std::move(hex));
      }
    });
  }
  if (found.empty()) {
    throw Error("no cache entry has a key starting with '" + prefix + "'");
  }
  if (found.size() > 1) {
    std::string names;
    for (std::size_t i = 0; i < found.size() && i < 5; ++i) {
      names += "\n  " + found[i];
    }
    throw Error("key prefix '" + prefix + "' is ambiguous: " + std::to_string(found.size()) +
                " entries match; give more digits" + names + (found.size() > 5 ? "\n  …" : ""));
  }
  return found.front();
}

EntryContents Cache::entry(const std::string& prefix) const
{
  const std::string hex = resolve_key(prefix);
  util::Sha256 key{};
  for (std::size_t i = 0; i < key.size(); ++i) {
    key[i] = static_cast<std::uint8_t>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
  }
  const auto bytes = m_impl->store->get(store::Table::entries, bytes_of(key));
  std::string why = "removed meanwhile";
  auto entry = bytes ? store::decode_record(*bytes, key, store::Sections::all, why) : std::nullopt;
  if (!entry || !store::load_headers(*m_impl->store, *entry, why)) {
    throw StoreError("the cache entry " + hex + " is damaged: " + why + " (kjit verify --repair moves it aside)", 0);
  }
  EntryContents contents;
  contents.info = info_of(bytes_of(key), bytes->size(), *entry);
  contents.program_txt = std::move(entry->program_txt);
  contents.options_txt = std::move(entry->options_txt);
  contents.source = std::move(entry->source);
  contents.headers = std::move(entry->headers);
  contents.options = std::move(entry->options);
  contents.binary = std::move(entry->binary);
  return contents;
}

VerifyReport Cache::verify(Repair repair, const std::function<void(std::size_t, std::size_t)>& progress)
{
  VerifyReport report;
  if (!m_impl->store) {
    return report;
  }
  if (repair == Repair::quarantine) {
    require_writable(*this);
  }
  struct Bad {
    std::string key;
    std::string bytes;
    std::string why;
  };
  std::vector<Bad> bad;
  const std::size_t total = m_impl->store->count(store::Table::entries);
  std::map<util::Sha256, std::vector<std::string>> users;  // header blob → the entries that use it
  m_impl->store->for_each(store::Table::entries, [&](std::string_view key, std::string_view bytes) {
    std::string why;
    const auto entry = store::decode_record(bytes, util::digest_of_bytes(key), store::Sections::all, why);
    if (!entry) {
      bad.push_back({std::string(key), std::string(bytes), why});
    } else {
      for (const store::HeaderRef& header : entry->header_refs) {
        if (entry->headers.count(header.name) == 0) {
          users[header.hash].emplace_back(key);
        }
      }
    }
    ++report.checked;
    if (progress) {
      progress(report.checked, total);
    }
  });
  // Every header blob an entry needs is there and intact (content hashed again). The records were
  // read in one transaction, the blobs in others: another process may have removed an entry
  // meanwhile (prune, eviction, clear), and its blobs with it. So an entry whose blob is missing or
  // damaged is read again with the blob in one transaction: gone is not damaged.
  for (const auto& [hash, keys] : users) {
    std::string why = "missing from the store";
    bool good = false;
    const std::string blob_key = store::blob_key(hash);
    m_impl->store->visit(store::Table::blobs, blob_key, [&](std::string_view bytes) {
      good = store::decode_blob(bytes, hash, why).has_value();
    });
    for (const std::string& key : good ? std::vector<std::string>{} : keys) {
      if (std::any_of(bad.begin(), bad.end(), [&](const Bad& b) { return b.key == key; })) {
        continue;
      }
      std::optional<std::string> record;  // the entry as it is now, if it is still stored
      bool intact = false;
      why = "missing from the store";
      m_impl->store->visit_chained(
        store::Table::entries, key,
        [&](std::string_view bytes) -> std::optional<std::string_view> {
          record.emplace(bytes);
          return blob_key;
        },
        store::Table::blobs, [&](std::string_view bytes) { intact = store::decode_blob(bytes, hash, why).has_value(); });
      if (record && !intact) {
        bad.push_back({key, std::move(*record), "the content of a header (blob " + util::to_hex(hash).substr(0, 16) + ") is " + why});
      }
    }
  }
  std::vector<std::string> removed;
  std::set<std::string> manifests;  // of the quarantined records, where their framing still says
  for (Bad& b : bad) {
    report.bad.emplace_back(cache::hex_of(b.key), b.why);
    if (repair == Repair::quarantine) {
      if (const auto named = store::input_field(b.bytes, store::InputField::manifest_key)) {
        manifests.emplace(*named);
      }
      m_impl->store->quarantine(b.key, b.bytes, "kjit verify: " + b.why);
      removed.push_back(b.key);
      ++report.quarantined;
    }
  }
  if (repair == Repair::quarantine) {
    cache::erase_leads(*m_impl->store, removed, manifests);  // no row leads to what is gone
    m_impl->direct_index.clear();
    m_impl->store->sweep_blobs();  // references of quarantined records, blobs no entry uses
    if (m_impl->store->replacements() > 0 && m_impl->dir.writable) {
      // The store was moved aside (damaged): the mirror's folders of entries it no longer holds go
      // too; mirror_removed() below then sweeps their headers and rewrites index.txt.
      std::set<std::string> keep;
      for (const mirror::IndexRow& row : m_impl->index_rows()) {
        keep.insert(row.key);
      }
      if (m_impl->mirror_writer) {
        m_impl->mirror_writer->flush();
      }
      mirror::prune(m_impl->dir.io_path, &keep);
    }
    m_impl->mirror_removed(removed);
  }
  return report;
}

std::size_t Cache::prune_older_than(std::int64_t seconds)
{
  require_writable(*this);
  const std::vector<cache::Row> rows = cache::decoded_rows(m_impl->store.get(), {});
  // now - seconds, saturated: INT64_MIN overflowed it (undefined; here it wrapped to a cutoff
  // before every entry, where -1 removes them all).
  std::int64_t cutoff = 0;
  if (__builtin_sub_overflow(static_cast<std::int64_t>(::time(nullptr)), seconds, &cutoff)) {
    cutoff = seconds < 0 ? INT64_MAX : INT64_MIN;
  }
  std::vector<const cache::Row*> old;
  for (const cache::Row& row : rows) {
    if (row.entry.created_unix < cutoff) {
      old.push_back(&row);
    }
  }
  if (!old.empty()) {
    cache::remove_rows(*m_impl, old);
  }
  return old.size();
}

std::size_t Cache::prune_to_size(std::size_t bytes)
{
  require_writable(*this);
  std::size_t remaining = 0;
  const std::size_t removed = m_impl->evict_to(bytes, remaining);
  if (m_impl->config.max_size != 0) {
    m_impl->keep_count(remaining);  // counted whole just now: the store's count for KJIT_MAX_SIZE
  }
  return removed;
}

bool Cache::remove_mirror()
{
  require_writable(*this);
  struct stat st {};
  const bool existed = ::lstat((m_impl->config.cache_dir + "/programs").c_str(), &st) == 0;
  if (m_impl->mirror_writer) {
    m_impl->mirror_writer->discard();
  }
  mirror::remove_tree(m_impl->config.cache_dir, "programs");
  if (m_impl->store) {
    m_impl->store->erase(store::Table::meta, {std::string(store::k_size_count)});  // counted again, without it
    std::lock_guard lock(m_impl->size.mutex);
    m_impl->size.counted = false;
  }
  return existed;
}

DiskUsage Cache::usage() const
{
  DiskUsage usage;
  if (!m_impl->store) {
    return usage;
  }
  m_impl->store->for_each(store::Table::entries, [&](std::string_view key, std::string_view bytes) {
    ++usage.entries;
    usage.record_bytes += bytes.size();
    std::string why;
    const auto entry = store::decode_record(bytes, util::digest_of_bytes(key), store::Sections::all, why);
    if (!entry) {
      ++usage.damaged;
      return;
    }
    const EntryInfo info = info_of(key, bytes.size(), *entry);
    usage.failures += info.failed ? 1 : 0;
    usage.cubin_bytes += info.cubin_bytes;
    usage.ptx_bytes += info.ptx_bytes;
    usage.source_bytes += info.source_bytes;
    usage.log_bytes += info.log_bytes;
    usage.compile_ms_stored += info.compile_ms;
  });
  usage.quarantined = m_impl->store->count(store::Table::quarantine);
  struct stat st {};
  if (::stat((m_impl->store->path() + "/data.mdb").c_str(), &st) == 0) {
    usage.store_file_bytes = static_cast<std::size_t>(st.st_blocks) * 512;
  }
  if (m_impl->mirror_writer) {
    m_impl->mirror_writer->flush();  // the mirror as this cache will leave it
  }
  usage.mirror_bytes = cache::allocated_bytes(m_impl->config.cache_dir + "/programs");
  static_cast<UsageTotals&>(usage) = cache::read_usage(m_impl->config.cache_dir);
  return usage;
}

void Cache::zero_usage()
{
  require_writable(*this);
  if (const std::error_code error = cache::zero_usage(m_impl->config.cache_dir)) {
    throw StoreError("cannot zero the usage counts in " + m_impl->config.cache_dir + ": " + error.message(),
                     error.value());
  }
}

} // namespace kjit
