// Whole tables: iteration, erasing keys, sizes and counts, clearing, and the sweep of unused blobs.
#include "store/store.hpp"

#include "config/log.hpp"
#include "store/blob_txn.hpp"
#include "store/check.hpp"
#include "store/committer.hpp"
#include "util/file_size_signal.hpp"
#include "store/isolated.hpp"
#include "store/store_impl.hpp"
#include "util/file.hpp"
#include "util/fork_safe.hpp"
#include "util/stopwatch.hpp"

#include <algorithm>
#include <cerrno>
#include <fcntl.h>
#include <climits>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <mutex>
#include <set>
#include <sys/statvfs.h>
#include <sys/stat.h>
#include <system_error>
#include <unistd.h>

namespace kjit::store {

void Store::for_each(Table table, const std::function<void(std::string_view, std::string_view)>& visit) const
{
  m_committer->settle();
  for_each_prefix(table, {}, visit);
}

void Store::for_each_prefix(Table table, std::string_view prefix,
                            const std::function<void(std::string_view, std::string_view)>& visit) const
{
  m_committer->settle();
  const int t = static_cast<int>(table);
  Impl& impl = *m_impl;
  impl.guarded(
    [&] {
      return impl.read(
        [&](MDB_txn* txn) {
          if (!impl.has_table[t]) {
            return true;
          }
          MDB_cursor* cursor = nullptr;
          impl.check(mdb_cursor_open(txn, impl.dbis[t], &cursor), "mdb_cursor_open");
          struct Close {
            MDB_cursor* cursor;
            ~Close() { mdb_cursor_close(cursor); }
          } close{cursor};
          MDB_val k = Impl::val(prefix);
          MDB_val v{};
          int rc = mdb_cursor_get(cursor, &k, &v, prefix.empty() ? MDB_FIRST : MDB_SET_RANGE);
          for (; rc == MDB_SUCCESS; rc = mdb_cursor_get(cursor, &k, &v, MDB_NEXT)) {
            if (!impl.inside_file(k.mv_data, k.mv_size) || !impl.inside_file(v.mv_data, v.mv_size)) {
              throw Damaged("a row of " + impl.path + " lies outside data.mdb");
            }
            if (Impl::view(k).substr(0, prefix.size()) != prefix) {
              break;
            }
            std::string_view value = Impl::view(v);
            if (table == Table::meta) {
              const auto stripped = strip_meta_trailer(value);
              if (!stripped) {
                continue;
              }
              value = *stripped;
            }
            visit(Impl::view(k), value);
          }
          if (rc != MDB_SUCCESS && rc != MDB_NOTFOUND) {
            impl.check(rc, "mdb_cursor_get");
          }
          return true;
        },
        true);
    },
    true);
}

void Store::erase(Table table, const std::vector<std::string>& keys)
{
  m_committer->settle();
  if (!m_writable || keys.empty()) {
    return;
  }
  before_write();
  Impl& impl = *m_impl;
  impl.guarded(
    [&] {
      impl.write([&](MDB_txn* txn) {
        const bool blobs = table == Table::entries && impl.has_blob_tables();
        for (const auto& key : keys) {
          if (const int rc = blobs ? release_blobs(txn, impl.blob_dbis(), key) : MDB_SUCCESS; rc != MDB_SUCCESS) {
            return rc;
          }
          MDB_val k = Impl::val(key);
          const int rc = mdb_del(txn, impl.dbis[static_cast<int>(table)], &k, nullptr);
          if (rc != MDB_SUCCESS && rc != MDB_NOTFOUND) {
            return rc;
          }
        }
        return MDB_SUCCESS;
      });
      return true;
    },
    false);
}

Store::TableSize Store::table_size(Table table) const
{
  const int t = static_cast<int>(table);
  Impl& impl = *m_impl;
  return impl.guarded(
    [&] {
      return impl.read(
        [&](MDB_txn* txn) {
          TableSize size;
          if (impl.has_table[t]) {
            MDB_stat stat{};
            impl.check(mdb_stat(txn, impl.dbis[t], &stat), "mdb_stat");
            size.entries = stat.ms_entries;
            size.bytes = static_cast<std::size_t>(stat.ms_branch_pages + stat.ms_leaf_pages + stat.ms_overflow_pages) *
                         stat.ms_psize;
          }
          return size;
        },
        TableSize{});
    },
    TableSize{});
}

std::size_t Store::count(Table table) const
{
  m_committer->settle();
  return table_size(table).entries;
}

std::size_t Store::table_bytes(Table table) const
{
  // No settle(): the size limit calls this right after queueing a commit, with a bound on what
  // the pending commit adds; it counts() (which settles) first when that bound could pass the limit.
  return table_size(table).bytes;
}

void Store::clear(Table table)
{
  m_committer->settle();
  if (!m_writable) {
    throw StoreError("the store " + path() + " is read-only: nothing was cleared", EROFS);
  }
  before_write();
  Impl& impl = *m_impl;
  impl.guarded(
    [&] {
      impl.write([&](MDB_txn* txn) {
        int rc = mdb_drop(txn, impl.dbis[static_cast<int>(table)], 0);
        if (rc == MDB_SUCCESS && table == Table::entries && impl.has_blob_tables()) {
          rc = mdb_drop(txn, impl.blob_dbis().blobs, 0);
          rc = rc == MDB_SUCCESS ? mdb_drop(txn, impl.blob_dbis().refs, 0) : rc;
        }
        return rc;
      });
      return true;
    },
    false);
}

Store::BlobSweep Store::sweep_blobs()
{
  m_committer->settle();
  BlobSweep report;
  if (!m_writable || !m_impl->has_blob_tables()) {
    return report;
  }
  before_write();
  Impl& impl = *m_impl;
  impl.guarded(
    [&] {
      impl.write([&](MDB_txn* txn) {
        report = BlobSweep{};  // a retried transaction counts again
        return store::sweep_blobs(txn, impl.blob_dbis(), report);
      });
      return true;
    },
    false);
  return report;
}

} // namespace kjit::store
