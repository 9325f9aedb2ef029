// Blob bookkeeping inside LMDB write transactions (shared by Store and the quarantine child).
#include "store/blob_txn.hpp"

#include "store/blobs.hpp"
#include "store/record.hpp"
#include "util/file.hpp"
#include "util/hash.hpp"

#include <algorithm>
#include <string>
#include <vector>

namespace kjit::store {

namespace {

MDB_val val(std::string_view bytes)
{
  return MDB_val{bytes.size(), const_cast<char*>(bytes.data())};
}

std::string_view view(const MDB_val& v)
{
  return {static_cast<const char*>(v.mv_data), v.mv_size};
}

// Whether any `blob_refs` row starts with `hash`; an LMDB code in `rc` on failure.
bool referenced(MDB_txn* txn, MDB_dbi refs, std::string_view hash, int& rc)
{
  MDB_cursor* cursor = nullptr;
  rc = mdb_cursor_open(txn, refs, &cursor);
  if (rc != MDB_SUCCESS) {
    return true;
  }
  MDB_val k = val(hash);
  MDB_val v{};
  const int got = mdb_cursor_get(cursor, &k, &v, MDB_SET_RANGE);
  const bool used = got == MDB_SUCCESS && view(k).substr(0, hash.size()) == hash;
  rc = got == MDB_SUCCESS || got == MDB_NOTFOUND ? MDB_SUCCESS : got;
  mdb_cursor_close(cursor);
  return used;
}

int del(MDB_txn* txn, MDB_dbi dbi, std::string_view key)
{
  MDB_val k = val(key);
  const int rc = mdb_del(txn, dbi, &k, nullptr);
  return rc == MDB_NOTFOUND ? MDB_SUCCESS : rc;
}

// Every key of `dbi` (copied: a write in the transaction invalidates what LMDB handed out).
int keys_of(MDB_txn* txn, MDB_dbi dbi, std::vector<std::string>& keys)
{
  MDB_cursor* cursor = nullptr;
  int rc = mdb_cursor_open(txn, dbi, &cursor);
  if (rc != MDB_SUCCESS) {
    return rc;
  }
  MDB_val k{}, v{};
  for (rc = mdb_cursor_get(cursor, &k, &v, MDB_FIRST); rc == MDB_SUCCESS; rc = mdb_cursor_get(cursor, &k, &v, MDB_NEXT)) {
    keys.emplace_back(view(k));
  }
  mdb_cursor_close(cursor);
  return rc == MDB_NOTFOUND ? MDB_SUCCESS : rc;
}

} // namespace

int put_blob(MDB_txn* txn, MDB_dbi blobs, std::string_view hash, std::string_view content, bool encoded)
{
  MDB_val k = val(hash);
  MDB_val existing{};
  const int rc = mdb_get(txn, blobs, &k, &existing);
  if (rc == MDB_SUCCESS && blob_intact(view(existing))) {
    return MDB_SUCCESS;  // stored once: an intact blob under this hash holds this content
  }
  if (rc != MDB_SUCCESS && rc != MDB_NOTFOUND) {
    return rc;
  }
  const std::string blob = encoded ? std::string() : encode_blob(content);
  MDB_val v = val(encoded ? content : std::string_view(blob));
  return mdb_put(txn, blobs, &k, &v, 0);
}

int require_blob(MDB_txn* txn, MDB_dbi blobs, std::string_view hash, const std::string& path)
{
  MDB_val k = val(hash);
  MDB_val existing{};
  if (mdb_get(txn, blobs, &k, &existing) == MDB_SUCCESS && blob_intact(view(existing))) {
    return MDB_SUCCESS;
  }
  // Gone since the lookup (a prune, an eviction): stored again from its file while that still
  // holds the content the entry names.
  std::error_code ignored;
  const auto content = path.empty() ? std::nullopt : util::read_file(path, ignored);
  const util::Sha256 read = content ? util::sha256(*content) : util::Sha256{};
  if (!content || std::string_view(reinterpret_cast<const char*>(read.data()), read.size()) != hash) {
    return MDB_NOTFOUND;
  }
  return put_blob(txn, blobs, hash, *content);
}

int release_blobs(MDB_txn* txn, const BlobDbis& dbis, std::string_view key)
{
  MDB_val k = val(key);
  MDB_val record{};
  int rc = mdb_get(txn, dbis.entries, &k, &record);
  if (rc == MDB_NOTFOUND) {
    return MDB_SUCCESS;
  }
  if (rc != MDB_SUCCESS) {
    return rc;
  }
  std::string why;
  const auto hashes = header_blobs(view(record), why);
  if (!hashes) {
    return MDB_SUCCESS;
  }
  for (const util::Sha256& hash : *hashes) {
    const std::string blob = blob_key(hash);
    if ((rc = del(txn, dbis.refs, blob_ref_key(hash, key))) != MDB_SUCCESS) {
      return rc;
    }
    const bool used = referenced(txn, dbis.refs, blob, rc);
    if (rc != MDB_SUCCESS) {
      return rc;
    }
    if (!used && (rc = del(txn, dbis.blobs, blob)) != MDB_SUCCESS) {
      return rc;
    }
  }
  return MDB_SUCCESS;
}

int sweep_blobs(MDB_txn* txn, const BlobDbis& dbis, Store::BlobSweep& report)
{
  std::vector<std::string> entries;
  int rc = keys_of(txn, dbis.entries, entries);
  // Every reference a record holds has its row.
  for (const std::string& key : entries) {
    MDB_val k = val(key);
    MDB_val record{};
    if ((rc = mdb_get(txn, dbis.entries, &k, &record)) != MDB_SUCCESS) {
      return rc;
    }
    std::string why;
    const auto hashes = header_blobs(view(record), why);
    for (const util::Sha256& hash : hashes ? *hashes : std::vector<util::Sha256>{}) {
      const std::string ref = blob_ref_key(hash, key);
      MDB_val rk = val(ref);
      MDB_val one = val("1");
      rc = mdb_put(txn, dbis.refs, &rk, &one, MDB_NOOVERWRITE);
      if (rc == MDB_SUCCESS) {
        ++report.refs_added;
      } else if (rc != MDB_KEYEXIST) {
        return rc;
      }
    }
  }
  // Every row names an entry that is there.
  std::vector<std::string> refs;
  if ((rc = keys_of(txn, dbis.refs, refs)) != MDB_SUCCESS) {
    return rc;
  }
  for (const std::string& ref : refs) {
    MDB_val k = val(std::string_view(ref).substr(std::min<std::size_t>(32, ref.size())));
    MDB_val record{};
    rc = ref.size() == 64 ? mdb_get(txn, dbis.entries, &k, &record) : MDB_NOTFOUND;
    if (rc == MDB_NOTFOUND) {
      if ((rc = del(txn, dbis.refs, ref)) != MDB_SUCCESS) {
        return rc;
      }
      ++report.refs_removed;
    } else if (rc != MDB_SUCCESS) {
      return rc;
    }
  }
  // Every blob is referred to.
  std::vector<std::string> blobs;
  if ((rc = keys_of(txn, dbis.blobs, blobs)) != MDB_SUCCESS) {
    return rc;
  }
  for (const std::string& blob : blobs) {
    const bool used = referenced(txn, dbis.refs, blob, rc);
    if (rc != MDB_SUCCESS) {
      return rc;
    }
    if (!used) {
      if ((rc = del(txn, dbis.blobs, blob)) != MDB_SUCCESS) {
        return rc;
      }
      ++report.blobs_removed;
    }
  }
  return MDB_SUCCESS;
}

} // namespace kjit::store
