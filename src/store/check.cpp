// Walking every page a lookup could reach, and quarantining inside the walked environment.
#include "store/check.hpp"

#include "store/blob_txn.hpp"
#include "store/store_impl.hpp"
#include "util/file.hpp"

#include <cstdint>
#include <algorithm>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <charconv>
#include <string>
#include <lmdb.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <system_error>
#include <tuple>
#include <utility>
#include <unistd.h>
#include <vector>

namespace kjit::store {

namespace {

std::function<void()> g_measure_hook;

constexpr std::size_t k_page_header = 16;   // PAGEHDRSZ of LMDB 0.9
constexpr std::uint16_t k_overflow_flag = 0x04;  // P_OVERFLOW

struct Env {
  MDB_env* env = nullptr;
  ~Env()
  {
    if (env != nullptr) {
      mdb_env_close(env);
    }
  }
};

// Returns MDB_SUCCESS, mdb_env_open()'s code, or MDB_INVALID when data.mdb is too short for its pages.
int open_env(Env& e, const std::string& dir, std::size_t map_size, unsigned flags, std::string& why)
{
  int rc = mdb_env_create(&e.env);
  if (rc == MDB_SUCCESS) {
    mdb_env_set_maxdbs(e.env, 16);
    mdb_env_set_maxreaders(e.env, 512);
    mdb_env_set_mapsize(e.env, map_size);
    rc = mdb_env_open(e.env, dir.c_str(), flags | MDB_NOTLS, 0600);
  }
  if (rc != MDB_SUCCESS) {
    why = std::string("mdb_env_open: ") + mdb_strerror(rc);
    return rc;
  }
  // The file must cover the last page before the map is read at all.
  int fd = -1;
  struct stat st {};
  MDB_envinfo info{};
  MDB_stat stat{};
  mdb_env_get_fd(e.env, &fd);
  if (::fstat(fd, &st) != 0 || st.st_size < 2 * 512) {
    why = "data.mdb too short";
    return MDB_INVALID;
  }
  std::uint32_t psize = 0;
  if (::pread(fd, &psize, sizeof psize, 40) != sizeof psize || psize < 512 || psize > 65536) {
    why = "bad page size in meta page";
    return MDB_INVALID;
  }
  if (static_cast<std::size_t>(st.st_size) < 2 * std::size_t(psize)) {
    why = "data.mdb shorter than its meta pages";
    return MDB_INVALID;
  }
  // The last page first, then the file again: another process's commit between the two grows
  // both, and the file only grows (a commit writes its pages before its meta page), so a sound
  // file measured after its last page was read covers it; the other way round, a commit between
  // them made a sound store "shorter than its last page" (a check beside writers, 1 in ≈ 150).
  mdb_env_info(e.env, &info);
  mdb_env_stat(e.env, &stat);
  if (g_measure_hook) {
    g_measure_hook();
  }
  if (::fstat(fd, &st) != 0 || static_cast<std::size_t>(st.st_size) < (info.me_last_pgno + 1) * std::size_t(psize)) {
    why = "data.mdb shorter than its last page";
    return MDB_INVALID;
  }
  return MDB_SUCCESS;
}

struct Walker {
  const char* base;
  std::size_t file_size;
  std::size_t psize;
  std::size_t rows = 0;
  unsigned sum = 0;

  bool inside(const MDB_val& v) const
  {
    const auto* p = static_cast<const char*>(v.mv_data);
    return p >= base && static_cast<std::size_t>(p - base) <= file_size &&
           v.mv_size <= file_size - static_cast<std::size_t>(p - base);
  }

  // Values too big for a leaf page start right after an overflow page's header.
  bool overflow_ok(const MDB_val& v) const
  {
    const auto offset = static_cast<std::size_t>(static_cast<const char*>(v.mv_data) - base);
    const bool on_overflow = offset % psize == k_page_header;
    if (!on_overflow) {
      return v.mv_size <= psize / 2;
    }
    const char* page = base + offset - k_page_header;
    std::uint64_t pgno = 0;
    std::uint16_t flags = 0;
    std::uint32_t pages = 0;
    std::memcpy(&pgno, page, sizeof pgno);
    std::memcpy(&flags, page + 10, sizeof flags);
    std::memcpy(&pages, page + 12, sizeof pages);
    const std::size_t needed = (k_page_header - 1 + v.mv_size) / psize + 1;
    return pgno == offset / psize && (flags & k_overflow_flag) != 0 && pages == needed;
  }

  bool visit(const MDB_val& k, const MDB_val& v, std::string& why)
  {
    if (!inside(k) || !inside(v)) {
      why = "a row lies outside data.mdb";
      return false;
    }
    if (!overflow_ok(v)) {
      why = "a large value is not on a well-formed overflow page";
      return false;
    }
    for (const MDB_val* x : {&k, &v}) {
      const auto* bytes = static_cast<const unsigned char*>(x->mv_data);
      for (std::size_t i = 0; i < x->mv_size; i += 512) {  // touch every page
        sum += bytes[i];
      }
      if (x->mv_size > 0) {
        sum += bytes[x->mv_size - 1];
      }
    }
    ++rows;
    return true;
  }
};

bool walk_dbi(MDB_txn* txn, MDB_dbi dbi, Walker& walker, std::vector<std::string>* names, std::string& why)
{
  MDB_cursor* cursor = nullptr;
  int rc = mdb_cursor_open(txn, dbi, &cursor);
  if (rc != MDB_SUCCESS) {
    why = std::string("mdb_cursor_open: ") + mdb_strerror(rc);
    return false;
  }
  MDB_val k{}, v{};
  for (rc = mdb_cursor_get(cursor, &k, &v, MDB_FIRST); rc == MDB_SUCCESS; rc = mdb_cursor_get(cursor, &k, &v, MDB_NEXT)) {
    if (names != nullptr) {
      if (!walker.inside(k)) {
        why = "a table name lies outside data.mdb";
        break;
      }
      names->emplace_back(static_cast<const char*>(k.mv_data), k.mv_size);
    } else if (!walker.visit(k, v, why)) {
      break;
    }
  }
  mdb_cursor_close(cursor);
  if (!why.empty()) {
    return false;
  }
  if (rc != MDB_NOTFOUND) {
    why = std::string("walking a table: ") + mdb_strerror(rc);
    return false;
  }
  return true;
}

// The free-page table (dbi 0, readable only in a read txn): a commit reads it to reuse pages, so
// a damaged one would crash the first write. Each value is a page list: a count, then the pages.
bool walk_free_pages(MDB_txn* txn, Walker& walker, std::size_t last_pgno, std::string& why)
{
  MDB_cursor* cursor = nullptr;
  int rc = mdb_cursor_open(txn, 0, &cursor);
  if (rc != MDB_SUCCESS) {
    why = std::string("mdb_cursor_open (free pages): ") + mdb_strerror(rc);
    return false;
  }
  MDB_val k{}, v{};
  for (rc = mdb_cursor_get(cursor, &k, &v, MDB_FIRST); rc == MDB_SUCCESS; rc = mdb_cursor_get(cursor, &k, &v, MDB_NEXT)) {
    if (!walker.inside(k) || !walker.inside(v) || !walker.overflow_ok(v)) {
      why = "a list of free pages lies outside data.mdb";
      break;
    }
    std::uint64_t count = 0;
    if (v.mv_size < sizeof count || v.mv_size % sizeof count != 0 ||
        (std::memcpy(&count, v.mv_data, sizeof count), count != v.mv_size / sizeof count - 1)) {
      why = "a malformed list of free pages";
      break;
    }
    const auto* pages = static_cast<const char*>(v.mv_data) + sizeof count;
    for (std::uint64_t i = 0; i < count; ++i) {
      std::uint64_t pgno = 0;
      std::memcpy(&pgno, pages + i * sizeof pgno, sizeof pgno);
      if (pgno < 2 || pgno > last_pgno) {
        why = "a free page beyond the last page";
        break;
      }
    }
    if (!why.empty()) {
      break;
    }
  }
  mdb_cursor_close(cursor);
  if (!why.empty()) {
    return false;
  }
  if (rc != MDB_NOTFOUND) {
    why = std::string("walking the free pages: ") + mdb_strerror(rc);
    return false;
  }
  return true;
}

// One unsigned number in `base` at p (at least one digit), p moved past it.
bool number(const char*& p, const char* end, int base, unsigned long& out)
{
  const auto [next, error] = std::from_chars(p, end, out, base);
  if (error != std::errc{} || next == p) {
    return false;
  }
  p = next;
  return true;
}

// The character c at p (and, for a space, any more spaces), p moved past it.
bool skip(const char*& p, const char* end, char c)
{
  if (p == end || *p != c) {
    return false;
  }
  ++p;
  while (c == ' ' && p != end && *p == ' ') {
    ++p;
  }
  return true;
}

// A field up to the next space (the permissions), p moved past it and the spaces after.
bool skip_field(const char*& p, const char* end)
{
  while (p != end && *p != ' ') {
    ++p;
  }
  return skip(p, end, ' ');
}

// The first key of the main table in `txn`'s snapshot, where LMDB read it (in the map), or
// nullptr (none, an error).
const char* first_key_in(MDB_txn* txn)
{
  const char* key = nullptr;
  MDB_dbi main = 0;
  MDB_cursor* cursor = nullptr;
  if (mdb_dbi_open(txn, nullptr, 0, &main) == MDB_SUCCESS && mdb_cursor_open(txn, main, &cursor) == MDB_SUCCESS) {
    MDB_val found_key{};
    MDB_val value{};
    if (mdb_cursor_get(cursor, &found_key, &value, MDB_FIRST) == MDB_SUCCESS) {
      key = static_cast<const char*>(found_key.mv_data);
    }
    mdb_cursor_close(cursor);
  }
  return key;
}

// The first key of env's main table, read in a transaction of its own (first_key_in).
const char* first_main_key(MDB_env* env)
{
  MDB_txn* txn = nullptr;
  if (mdb_txn_begin(env, nullptr, MDB_RDONLY, &txn) != MDB_SUCCESS) {
    return nullptr;
  }
  const char* key = first_key_in(txn);
  mdb_txn_abort(txn);
  return key;
}

} // namespace

// The page holding the main table's first key names its own number (mp_pgno, LMDB 0.9's page
// header): the map starts that many pages before it, with meta page 0.
const char* map_address_from_a_page(MDB_env* env)
{
  MDB_stat stat{};
  MDB_envinfo info{};
  const auto system_page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  if (mdb_env_stat(env, &stat) != MDB_SUCCESS || mdb_env_info(env, &info) != MDB_SUCCESS || stat.ms_psize == 0 ||
      system_page == 0 || stat.ms_psize % system_page != 0) {
    return nullptr;
  }
  const std::size_t psize = stat.ms_psize;
  const char* key = first_main_key(env);  // read by LMDB through the map: its page is mapped
  if (key == nullptr) {
    return nullptr;
  }
  const auto page = reinterpret_cast<std::uintptr_t>(key) / psize * psize;  // the map is page-aligned
  std::uint64_t pgno = 0;
  std::uint16_t flags = 0;
  std::memcpy(&pgno, reinterpret_cast<const char*>(page), sizeof pgno);
  std::memcpy(&flags, reinterpret_cast<const char*>(page) + 10, sizeof flags);
  constexpr std::uint16_t k_leaf_flag = 0x02;  // P_LEAF
  constexpr std::uint16_t k_meta_flag = 0x08;  // P_META
  if ((flags & k_leaf_flag) == 0 || pgno > info.me_last_pgno || pgno > page / psize) {
    return nullptr;
  }
  const auto start = page - static_cast<std::uintptr_t>(pgno) * psize;
  // Mapped (msync fails with ENOMEM where nothing is) and meta page 0 of an LMDB file.
  if (::msync(reinterpret_cast<void*>(start), psize, MS_ASYNC) != 0) {
    return nullptr;
  }
  std::uint64_t meta_pgno = 1;
  std::uint16_t meta_flags = 0;
  std::uint32_t magic = 0;
  std::memcpy(&meta_pgno, reinterpret_cast<const char*>(start), sizeof meta_pgno);
  std::memcpy(&meta_flags, reinterpret_cast<const char*>(start) + 10, sizeof meta_flags);
  std::memcpy(&magic, reinterpret_cast<const char*>(start) + k_page_header, sizeof magic);
  constexpr std::uint32_t k_magic = 0xBEEFC0DE;  // MDB_MAGIC
  return meta_pgno == 0 && (meta_flags & k_meta_flag) != 0 && magic == k_magic ? reinterpret_cast<const char*>(start)
                                                                                 : nullptr;
}

// Where data.mdb (dev, ino) is mapped in this process, from /proc/self/maps: LMDB does not say
// (MDB_envinfo.me_mapaddr is only the fixed address of MDB_FIXEDMAP).
const char* map_address(MDB_env* env, dev_t dev, ino_t ino, const char* inside)
{
  const auto mappings = [dev, ino] {
    std::vector<std::pair<std::uintptr_t, std::uintptr_t>> found;
    std::error_code error;
    const std::string text = util::read_file("/proc/self/maps", error).value_or(std::string());
    // "start-end perms offset major:minor inode path", fields in hex but the inode; parsed by
    // hand: the stream and sscanf version cost 0.6 M instructions per store open (13 % of a warm
    // process's hit), this one ≈ 30 000.
    for (std::size_t at = 0; at < text.size();) {
      const std::size_t line_end = std::min(text.find('\n', at), text.size());
      const char* p = text.data() + at;
      const char* const end_of_line = text.data() + line_end;
      at = line_end + 1;
      unsigned long start = 0, end = 0, offset = 0, inode = 0, major = 0, minor = 0;
      const bool parsed = number(p, end_of_line, 16, start) && skip(p, end_of_line, '-') &&
                          number(p, end_of_line, 16, end) && skip(p, end_of_line, ' ') &&
                          skip_field(p, end_of_line) && number(p, end_of_line, 16, offset) &&
                          skip(p, end_of_line, ' ') && number(p, end_of_line, 16, major) &&
                          skip(p, end_of_line, ':') && number(p, end_of_line, 16, minor) &&
                          skip(p, end_of_line, ' ') && number(p, end_of_line, 10, inode);
      if (parsed && inode == ino && offset == 0 && ::makedev(major, minor) == dev) {
        found.emplace_back(start, end);
      }
    }
    return found;
  }();
  if (mappings.size() <= 1) {
    // The only map is the env's own: nothing read through it (the pages may be damaged and are
    // not checked yet; a read of the main table could crash the caller).
    return mappings.empty() ? nullptr : reinterpret_cast<const char*>(mappings.front().first);
  }
  // Several (a forked child also holds its parent's map, as the isolated check does): the one
  // holding a key read through env. Only here is a page read before the walk.
  inside = inside != nullptr ? inside : first_main_key(env);  // a key in env's own map
  for (const auto& [start, end] : mappings) {
    if (inside == nullptr ||
        (reinterpret_cast<std::uintptr_t>(inside) >= start && reinterpret_cast<std::uintptr_t>(inside) < end)) {
      return reinterpret_cast<const char*>(start);
    }
  }
  return nullptr;
}

Walk walk_store(const std::string& dir, bool no_lock, std::size_t& rows, std::string& why)
{
  Env e;
  // A map of what data.mdb holds (LMDB raises a smaller one to that), not of the Store's map: a
  // host near its address-space limit has room for this one only.
  if (const int rc = open_env(e, dir, 1, MDB_RDONLY | (no_lock ? MDB_NOLOCK : 0), why); rc != MDB_SUCCESS) {
    return is_structural(rc) ? Walk::damaged : Walk::not_run;  // no memory, no descriptor…: no verdict
  }
  MDB_txn* txn = nullptr;
  int rc = mdb_txn_begin(e.env, nullptr, MDB_RDONLY, &txn);
  for (int adopted = 0; rc == MDB_MAP_RESIZED && adopted < 16; ++adopted) {
    // Another process grew the store past this map since the open: adopted, as the Store does.
    rc = mdb_env_set_mapsize(e.env, 0);
    rc = rc == MDB_SUCCESS ? mdb_txn_begin(e.env, nullptr, MDB_RDONLY, &txn) : rc;
  }
  if (rc != MDB_SUCCESS) {
    why = std::string("mdb_txn_begin: ") + mdb_strerror(rc);
    return is_structural(rc) ? Walk::damaged : Walk::not_run;  // a full reader table…: no verdict
  }
  // Measured once the snapshot is taken: another process may have committed since the open, and
  // the newest last page (which the file covers) bounds every page of the snapshot. Read before
  // the file is measured (open_env() says why).
  MDB_envinfo info{};
  mdb_env_info(e.env, &info);
  if (g_measure_hook) {
    g_measure_hook();
  }
  int fd = -1;
  struct stat st {};
  mdb_env_get_fd(e.env, &fd);
  ::fstat(fd, &st);
  std::uint32_t psize = 0;
  std::ignore = ::pread(fd, &psize, sizeof psize, 40);
  // A key read in this walk's own snapshot tells its map from the parent's (a forked child holds
  // both): read in a transaction of its own, another process's growth of the map could refuse it,
  // and the walk then took the parent's map (the first listed) for its own and found every key
  // "outside data.mdb": a sound store moved aside (seen once in remote_fleet, processes writing
  // side by side; the cause inferred from the code, not reproduced alone).
  const char* base = map_address(e.env, st.st_dev, st.st_ino, first_key_in(txn));
  if (base == nullptr || psize < 512 || static_cast<std::size_t>(st.st_size) < (info.me_last_pgno + 1) * std::size_t(psize)) {
    why = base == nullptr ? "data.mdb is not mapped" : "data.mdb shorter than its last page";
    mdb_txn_abort(txn);
    return Walk::damaged;
  }
  Walker walker{base, std::min<std::size_t>(st.st_size, info.me_mapsize), psize};
  std::vector<std::string> tables;
  MDB_dbi main = 0;
  bool ok = walk_free_pages(txn, walker, info.me_last_pgno, why) && mdb_dbi_open(txn, nullptr, 0, &main) == MDB_SUCCESS &&
            walk_dbi(txn, main, walker, &tables, why);
  for (const std::string& table : tables) {
    if (!ok) {
      break;
    }
    MDB_dbi dbi = 0;
    rc = mdb_dbi_open(txn, table.c_str(), 0, &dbi);
    if (rc != MDB_SUCCESS) {
      why = "opening table " + table + ": " + mdb_strerror(rc);
      ok = false;
      break;
    }
    ok = walk_dbi(txn, dbi, walker, nullptr, why);
  }
  mdb_txn_abort(txn);
  rows = walker.rows + (walker.sum == 0xFFFFFFFFu ? 1 : 0);  // keeps the reads from being optimized out
  return ok ? Walk::sound : Walk::damaged;
}

namespace {

// The quarantine's write transaction on `env`: begun, written, committed (or aborted). Returns
// LMDB's code.
int quarantine_txn(MDB_env* env, std::string_view key, std::string_view bytes, std::string_view row_key,
                   std::string_view row, std::size_t keep)
{
  MDB_txn* txn = nullptr;
  int rc = mdb_txn_begin(env, nullptr, 0, &txn);
  for (int adopted = 0; rc == MDB_MAP_RESIZED && adopted < 16; ++adopted) {
    rc = mdb_env_set_mapsize(env, 0);  // grown by another process since the open: adopted
    rc = rc == MDB_SUCCESS ? mdb_txn_begin(env, nullptr, 0, &txn) : rc;
  }
  MDB_dbi entries = 0, quarantine = 0, blobs = 0, refs = 0, meta = 0;
  if (rc == MDB_SUCCESS) {
    rc = mdb_dbi_open(txn, "entries", MDB_CREATE, &entries);
  }
  if (rc == MDB_SUCCESS) {
    rc = mdb_dbi_open(txn, "meta", MDB_CREATE, &meta);
  }
  if (rc == MDB_SUCCESS) {
    rc = mdb_dbi_open(txn, "quarantine", MDB_CREATE, &quarantine);
  }
  if (rc == MDB_SUCCESS) {
    rc = mdb_dbi_open(txn, "blobs", MDB_CREATE, &blobs);
  }
  if (rc == MDB_SUCCESS) {
    rc = mdb_dbi_open(txn, "blob_refs", MDB_CREATE, &refs);
  }
  MDB_val k{key.size(), const_cast<char*>(key.data())};
  MDB_val v{};
  if (rc == MDB_SUCCESS) {
    rc = mdb_get(txn, entries, &k, &v);
    if (rc == MDB_SUCCESS && std::string_view(static_cast<const char*>(v.mv_data), v.mv_size) == bytes) {
      MDB_val qk{row_key.size(), const_cast<char*>(row_key.data())};
      MDB_val qv{row.size(), const_cast<char*>(row.data())};
      rc = mdb_put(txn, quarantine, &qk, &qv, 0);
      if (rc == MDB_SUCCESS) {
        // Its inputs may still be readable: the blobs only it used go with it (else sweep_blobs()).
        rc = release_blobs(txn, BlobDbis{entries, blobs, refs}, key);
      }
      if (rc == MDB_SUCCESS) {
        rc = mdb_del(txn, entries, &k, nullptr);
      }
      if (rc == MDB_SUCCESS) {
        // Its last use (src/cache/size_limit.cpp) goes with it.
        std::string used = "used " + std::string(key);
        MDB_val uk{used.size(), used.data()};
        rc = mdb_del(txn, meta, &uk, nullptr);
        rc = rc == MDB_NOTFOUND ? MDB_SUCCESS : rc;
      }
      // Keep the newest `keep` rows: their keys end with the time, but start with the entry key,
      // so the oldest are found by their time suffix.
      MDB_stat stat{};
      if (rc == MDB_SUCCESS && mdb_stat(txn, quarantine, &stat) == MDB_SUCCESS && stat.ms_entries > keep) {
        MDB_cursor* cursor = nullptr;
        std::vector<std::pair<long long, std::string>> rows;
        if (mdb_cursor_open(txn, quarantine, &cursor) == MDB_SUCCESS) {
          MDB_val ck{}, cv{};
          for (int c = mdb_cursor_get(cursor, &ck, &cv, MDB_FIRST); c == MDB_SUCCESS;
               c = mdb_cursor_get(cursor, &ck, &cv, MDB_NEXT)) {
            const std::string name(static_cast<const char*>(ck.mv_data), ck.mv_size);
            const auto colon = name.rfind(':');
            rows.emplace_back(colon == std::string::npos ? 0 : std::atoll(name.c_str() + colon + 1), name);
          }
          mdb_cursor_close(cursor);
        }
        std::sort(rows.begin(), rows.end());
        for (std::size_t i = 0; rc == MDB_SUCCESS && i + keep < rows.size(); ++i) {
          MDB_val dk{rows[i].second.size(), rows[i].second.data()};
          rc = mdb_del(txn, quarantine, &dk, nullptr);
        }
      }
    } else if (rc == MDB_SUCCESS || rc == MDB_NOTFOUND) {
      rc = MDB_SUCCESS;  // replaced or removed by another process meanwhile: nothing to do
    }
  }
  if (txn != nullptr) {
    rc = rc == MDB_SUCCESS ? mdb_txn_commit(txn) : (mdb_txn_abort(txn), rc);
  }
  return rc;
}

} // namespace

int quarantine_in_place(const std::string& dir, std::size_t map_size, std::string_view key, std::string_view bytes,
                        std::string_view row_key, std::string_view row, std::size_t keep, std::string& why)
{
  Env e;
  if (const int rc = open_env(e, dir, map_size, MDB_NOMETASYNC, why); rc != MDB_SUCCESS) {
    return rc;
  }
  int rc = quarantine_txn(e.env, key, bytes, row_key, row, keep);
  for (int grown = 0; rc == MDB_MAP_FULL && grown < 8; ++grown) {
    // The map grows only when full: the quarantine row may not fit. Grown here, within the
    // child's address-space limit (this map once more, plus 1 GiB); the Store adopts it.
    MDB_envinfo info{};
    mdb_env_info(e.env, &info);
    rc = mdb_env_set_mapsize(e.env, info.me_mapsize + std::min(info.me_mapsize, std::size_t(512) << 20));
    rc = rc == MDB_SUCCESS ? quarantine_txn(e.env, key, bytes, row_key, row, keep) : rc;
  }
  if (rc != MDB_SUCCESS) {
    why = std::string("quarantine: ") + mdb_strerror(rc);
  }
  return rc;
}

void set_measure_hook(std::function<void()> hook)
{
  g_measure_hook = std::move(hook);
}

} // namespace kjit::store
