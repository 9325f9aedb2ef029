// The Store's writes: rows put in one write transaction, now or on the committer's thread, and
// the checksummed trailer of `meta` values (read back by strip_meta_trailer()).
#include "store/store.hpp"

#include "store/blob_txn.hpp"
#include "store/committer.hpp"
#include "store/store_impl.hpp"
#include "util/file_size_signal.hpp"
#include "util/hash.hpp"

#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <sys/stat.h>
#include <sys/statvfs.h>

namespace kjit::store {

namespace {

constexpr char k_meta_trailer[4] = {'K', 'J', 'M', '1'};

std::string with_meta_trailer(std::string_view value)
{
  std::string out(value);
  const util::Checksum sum = util::checksum(value);
  out.append(reinterpret_cast<const char*>(sum.data()), sum.size());
  out.append(k_meta_trailer, sizeof k_meta_trailer);
  return out;
}

// A write failure said truly: LMDB reports a full disk as EIO in places; look at the filesystem.
std::string write_failure(const std::string& dir, const StoreError& e)
{
  struct statvfs info {};
  if (e.code() == ENOSPC || ((e.code() == EIO || e.code() == EFBIG) && ::statvfs(dir.c_str(), &info) == 0 &&
                             info.f_bavail * info.f_frsize < (std::size_t(1) << 20))) {
    return "no space left on device (disk full) writing the store " + dir;
  }
  struct stat data {};
  if ((e.code() == EIO || e.code() == EFBIG) && ::stat((dir + "/data.mdb").c_str(), &data) == 0 &&
      util::near_file_size_limit(static_cast<unsigned long long>(data.st_size), 16ull << 20)) {
    return "the file size limit (ulimit -f) stops data.mdb from growing, writing the store " + dir + " (" + e.what() + ")";
  }
  return e.what();
}

// The stored `meta` value `stored` (its trailer on) with `added` (a whole number) added to the
// number it starts with; nullopt where it does not start with one (or is damaged).
std::optional<std::string> with_number_added(std::string_view stored, std::string_view added)
{
  const auto value = strip_meta_trailer(stored);
  std::uint64_t number = 0;
  std::uint64_t addend = 0;
  const auto [end, error] = value ? std::from_chars(value->data(), value->data() + value->size(), number)
                                  : std::from_chars_result{nullptr, std::errc::invalid_argument};
  const auto [added_end, added_error] = std::from_chars(added.data(), added.data() + added.size(), addend);
  if (error != std::errc() || added_error != std::errc() || added_end != added.data() + added.size()) {
    return std::nullopt;
  }
  const std::uint64_t sum = number > UINT64_MAX - addend ? UINT64_MAX : number + addend;
  return with_meta_trailer(std::to_string(sum) + std::string(end, value->data() + value->size()));
}

} // namespace

std::optional<std::string_view> strip_meta_trailer(std::string_view stored)
{
  const std::size_t trailer = sizeof(util::Checksum) + sizeof k_meta_trailer;
  if (stored.size() < trailer || stored.substr(stored.size() - sizeof k_meta_trailer) !=
                                   std::string_view(k_meta_trailer, sizeof k_meta_trailer)) {
    return std::nullopt;
  }
  const std::string_view value = stored.substr(0, stored.size() - trailer);
  const util::Checksum sum = util::checksum(value);
  if (std::memcmp(sum.data(), stored.data() + value.size(), sum.size()) != 0) {
    return std::nullopt;
  }
  return value;
}

void Store::put(const std::vector<Row>& rows)
{
  m_committer->settle();
  write_rows(rows);
}

void Store::put_later(std::vector<Row> rows, std::function<void(const StoreError*)> done)
{
  m_committer->queue([this, rows = std::move(rows)] { write_rows(rows); }, std::move(done));
}

std::uint64_t Store::later_commits() const noexcept
{
  return m_committer->committed();
}

void Store::write_rows(const std::vector<Row>& rows)
{
  if (!m_writable || rows.empty()) {
    return;
  }
  before_write();
  Impl& impl = *m_impl;
  std::string gone;  // a `present` row's blob that is not there, nor in its file
  std::string gone_file;
  try {
    impl.guarded(
      [&] {
        impl.write([&](MDB_txn* txn) {
          // The entries' uses of blobs are counted (blob_txn.hpp), before the entries are put.
          std::vector<std::string> uses;
          for (const Row& row : rows) {
            if (row.table == Table::blob_refs) {
              uses.push_back(row.key);
            }
          }
          if (!uses.empty() && impl.has_blob_tables()) {
            if (const int rc = add_users(txn, impl.blob_dbis(), uses); rc != MDB_SUCCESS) {
              return rc;
            }
          }
          for (const Row& row : rows) {
            if (!impl.has_table[static_cast<int>(row.table)] || row.table == Table::blob_refs) {
              continue;
            }
            if (row.table == Table::blobs && row.present) {
              if (const int rc = require_blob(txn, impl.dbis[static_cast<int>(row.table)], row.key, row.value);
                  rc != MDB_SUCCESS) {
                gone = rc == MDB_NOTFOUND ? row.key : std::string();
                gone_file = row.value;
                return rc;
              }
              continue;
            }
            if (row.table == Table::blobs) {
              if (const int rc = put_blob(txn, impl.dbis[static_cast<int>(row.table)], row.key, row.value, row.encoded); rc != MDB_SUCCESS) {
                return rc;
              }
              continue;
            }
            std::string meta;
            if (row.table == Table::meta && row.added) {
              MDB_val k = Impl::val(row.key);
              MDB_val stored{};
              if (mdb_get(txn, impl.dbis[static_cast<int>(row.table)], &k, &stored) != MDB_SUCCESS) {
                continue;  // (MDB_NOTFOUND; any other failure shows in the puts)
              }
              auto sum = with_number_added(std::string_view(static_cast<const char*>(stored.mv_data), stored.mv_size), row.value);
              if (!sum) {
                continue;
              }
              meta = std::move(*sum);
            } else if (row.table == Table::meta) {
              meta = with_meta_trailer(row.value);
            }
            MDB_val k = Impl::val(row.key);
            MDB_val v = Impl::val(row.table == Table::meta ? std::string_view(meta) : std::string_view(row.value));
            if (const int rc = mdb_put(txn, impl.dbis[static_cast<int>(row.table)], &k, &v, 0); rc != MDB_SUCCESS) {
              return rc;
            }
          }
          return MDB_SUCCESS;
        });
        return true;
      },
      false);
  } catch (const Damaged&) {
    throw;
  } catch (const StoreError& e) {
    if (!gone.empty()) {
      throw StoreError("the content of a header (" + gone_file + ", blob " +
                         util::to_hex(util::digest_of_bytes(gone)).substr(0, 16) + ") left " + path() +
                         " before its entry was stored, and the file no longer holds it; the entry is not stored",
                       ENOENT);
    }
    throw StoreError(write_failure(path(), e), e.code());
  }
}

} // namespace kjit::store
