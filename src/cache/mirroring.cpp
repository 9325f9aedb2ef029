// The Cache's mirror: entries queued to a background writer, removals, the index's rows, and its
// rebuild from the store (`kjit mirror --rebuild`).
#include "cache/cache_impl.hpp"

#include "cache/cache_dir.hpp"
#include "config/log.hpp"
#include "mirror/mirror.hpp"
#include "mirror/script_mirror.hpp"
#include "store/blobs.hpp"
#include "store/record.hpp"
#include "util/file_size_signal.hpp"
#include "util/hash.hpp"

#include <memory>
#include <mutex>
#include <set>
#include <sys/stat.h>
#include <system_error>

namespace kjit {

namespace {

std::string hex_of_raw(std::string_view raw)
{
  return util::to_hex(reinterpret_cast<const std::uint8_t*>(raw.data()), raw.size());
}

// 64 lowercase hex digits back to the 32 raw bytes of an LMDB key; empty if not that.
std::string raw_of_hex(const std::string& hex)
{
  if (hex.size() != 64 || hex.find_first_not_of("0123456789abcdef") != std::string::npos) {
    return {};
  }
  const auto digit = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
  std::string raw;
  for (std::size_t i = 0; i < hex.size(); i += 2) {
    raw += static_cast<char>(digit(hex[i]) * 16 + digit(hex[i + 1]));
  }
  return raw;
}

} // namespace

void Cache::Impl::open_mirror()
{
  if (!config.mirror || !dir.writable || !store || !store->writable()) {
    return;
  }
  mirror::WriterSource source;
  source.stored = [this](const std::string& hex) {
    const std::string raw = raw_of_hex(hex);
    return !raw.empty() && store->visit(store::Table::entries, raw, [](std::string_view) {});
  };
  source.has_blob = [this](const std::string& hex) { return has_blob(hex); };
  source.rows = [this] { return index_rows(); };
  source.load_headers = [this](store::Entry& entry) {
    std::string why;
    return store::load_headers(*store, entry, why);  // (a read waits for the entry's commit)
  };
  // One warning per cause (a full disk, a folder that is a file…), not one per entry: the entries
  // after it are counted (CacheStats::mirror_errors), and a new cause is said again.
  struct Said {
    std::mutex mutex;
    std::set<std::error_code> causes;
  };
  source.failed = [this, said = std::make_shared<Said>()](const std::string& what, std::error_code error) {
    statistics.count(&CacheStats::mirror_errors);
    std::lock_guard lock(said->mutex);
    if (said->causes.insert(error).second) {
      log::line("warning: cannot mirror " + what + ": " + error.message() +
                " (the store is unaffected; entries that fail for the same reason later are not named)");
    }
  };
  mirror_writer = std::make_unique<mirror::Writer>(dir.io_path, std::move(source));
}

void Cache::flush_mirror()
{
  if (m_impl->mirror_writer) {
    m_impl->mirror_writer->flush();
  }
}

bool Cache::Impl::has_blob(const std::string& hex) const
{
  const std::string raw = raw_of_hex(hex);
  return store && !raw.empty() && store->visit(store::Table::blobs, raw, [](std::string_view) {});
}

void Cache::Impl::mirror_headers_early(const deps::Resolution& resolution, std::vector<mirror::EarlyHeader> taken)
{
  if (!mirror_writer || resolution.headers.empty()) {
    return;
  }
  // Named by the hash the resolver made (not made again on the mirror's thread, beside NVRTC). A
  // header without its content (one a manifest named) is left to the entry's write.
  // Named as the entry will hold them (its path without the first '/'): their links are staged.
  std::vector<mirror::EarlyHeader> headers = std::move(taken);
  headers.reserve(resolution.headers.size());
  for (const deps::DiskHeader& header : resolution.headers) {
    if (!header.shed && !header.content.empty()) {
      headers.push_back({header.path.substr(1), util::to_hex(header.hash), header.content});
    }
  }
  mirror_writer->write_headers(std::move(headers));
}

std::size_t Cache::Impl::mirror_guess(const store::Entry& entry) const
{
  if (!mirror_writer) {
    return 0;
  }
  // Each file rounded up to a 4 KiB block, and the folders.
  const auto blocks = [](std::size_t bytes) { return (bytes + 4095) / 4096 * 4096; };
  std::size_t guess = 6 * 4096 + blocks(entry.program_txt.size()) + blocks(entry.options_txt.size()) +
                      blocks(entry.source.size()) + blocks(entry.binary.log.size()) + blocks(entry.binary.ptx.size()) +
                      blocks(entry.binary.cubin.size()) + blocks(entry.ltoir.size());
  for (const auto& [name, content] : entry.headers) {
    guess += blocks(content.size());
  }
  for (const store::HeaderRef& ref : entry.header_refs) {
    guess += entry.headers.count(ref.name) == 0 ? blocks(ref.size) : 0;  // a text let go: read from the store
  }
  return guess;
}

void Cache::Impl::mirror_entry(const util::Sha256& entry_key, store::Entry entry, std::size_t guess)
{
  if (mirror_writer) {
    {
      // For KJIT_MAX_SIZE (after_write), which cannot see the folder before the writer's turn.
      std::lock_guard lock(size.mutex);
      size.queued_mirror_bytes += guess;
    }
    try {
      // The cache folder deleted under this process (rm -rf): made again, as the store's write
      // makes its own folder again, or the mirror writes into the deleted one forever.
      std::lock_guard lock(dir_mutex);
      if (cache::follow_cache_dir(dir, config, store ? store->path() : std::string())) {
        log::line("note: the cache folder " + dir.path + " was made again: it was deleted, replaced or renamed "
                  "while this process had it open");
      }
    } catch (const std::exception& e) {
      cache::warn_once(std::string("cannot mirror into the cache folder: ") + e.what());
    }
    mirror_writer->write(util::to_hex(entry_key), std::move(entry));
  }
}

void Cache::Impl::mirror_removed(const std::vector<std::string>& raw_keys)
{
  std::vector<std::string> hex;
  for (const std::string& raw : raw_keys) {
    hex.push_back(hex_of_raw(raw));
  }
  if (mirror_writer) {
    mirror_writer->removed(hex);
  } else if (dir.writable) {
    // A mirror left from when it was on (KJIT_MIRROR=0 now): kept consistent as the writer's tidy
    // job keeps it: the folders, then the headers no entry uses and index.txt.
    for (const std::string& key : hex) {
      mirror::remove_entry(dir.io_path, key);
    }
    struct stat st {};
    if (::stat((dir.io_path + "/programs/index.txt").c_str(), &st) == 0) {
      std::ignore = mirror::write_index(dir.io_path, index_rows());
    }
    mirror::sweep_headers(dir.io_path, [this](const std::string& blob) { return has_blob(blob); });
  }
}

std::vector<mirror::IndexRow> Cache::Impl::index_rows() const
{
  std::vector<mirror::IndexRow> rows;
  if (store) {
    store->for_each(store::Table::entries, [&](std::string_view key, std::string_view bytes) {
      if (const auto summary = store::summarize_record(bytes)) {
        rows.push_back({hex_of_raw(key), summary->program_name, summary->arch, summary->created_unix,
                        summary->kind == store::EntryKind::failure});
      }
    });
  }
  return rows;
}

namespace cache {

namespace {

std::function<void()> g_listed_keys_hook;

} // namespace

void set_listed_keys_hook(std::function<void()> hook) { g_listed_keys_hook = std::move(hook); }

void run_listed_keys_hook()
{
  if (g_listed_keys_hook) {
    g_listed_keys_hook();
  }
}

} // namespace cache

std::size_t Cache::rebuild_mirror(std::size_t* skipped)
{
  std::size_t failed = 0;
  std::size_t written = 0;
  if (m_impl->mirror_writer) {
    m_impl->mirror_writer->flush();  // `kjit mirror`: what this process queued is written first
  }
  if (m_impl->store && m_impl->dir.writable) {
    const util::FileSizeSignalBlock no_sigxfsz;  // a file past ulimit -f is skipped, never kills the host
    // The keys first, then one short read per entry: no read transaction stays open while files
    // are written (the store may grow meanwhile).
    std::vector<std::string> keys;
    m_impl->store->for_each(store::Table::entries,
                            [&](std::string_view key, std::string_view) { keys.emplace_back(key); });
    std::set<std::string> keep;
    for (const std::string& key : keys) {
      keep.insert(util::to_hex(reinterpret_cast<const std::uint8_t*>(key.data()), key.size()));
    }
    mirror::prune(m_impl->dir.io_path, &keep);  // junk, entries no longer stored, temps of killed runs
    cache::run_listed_keys_hook();
    for (const std::string& key : keys) {
      std::optional<store::Entry> entry;
      std::string why;
      const bool stored = m_impl->store->visit(store::Table::entries, key, [&](std::string_view bytes) {
        entry = store::decode_record(bytes, util::digest_of_bytes(key), store::Sections::all, why);
      });
      const std::string hex = util::to_hex(reinterpret_cast<const std::uint8_t*>(key.data()), key.size());
      const auto gone = [&] {
        // Removed since the keys were listed (another process's prune, eviction or clear): neither
        // written nor a failure. Its folder, if a writer made one meanwhile, goes with the next prune.
        return !m_impl->store->visit(store::Table::entries, key, [](std::string_view) {});
      };
      const bool headers = entry && store::load_headers(*m_impl->store, *entry, why);
      if (!stored || (entry && !headers && gone())) {
        continue;
      }
      if (!entry || !headers || mirror::write_entry(m_impl->dir.io_path, hex, *entry)) {
        // Damaged (quarantined when next looked up or by verify --repair, never mirrored), a header
        // blob missing, or not writable.
        ++failed;
      } else {
        ++written;
      }
    }
    mirror::sweep_headers(m_impl->dir.io_path, [&](const std::string& hex) { return m_impl->has_blob(hex); });
    if (const std::error_code error = mirror::write_index(m_impl->dir.io_path, m_impl->index_rows())) {
      log::line("warning: cannot write the mirror's index.txt: " + error.message());
    }
    script::rebuild_mirror(*m_impl->store, m_impl->dir.io_path, failed);  // scripts/ too (src/script)
  }
  if (skipped != nullptr) {
    *skipped = failed;
  }
  return written;
}

} // namespace kjit
