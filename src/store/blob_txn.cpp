// Blob bookkeeping inside LMDB write transactions (shared by Store and the quarantine child).
#include "store/blob_txn.hpp"

#include "store/blobs.hpp"
#include "store/record.hpp"
#include "util/file.hpp"
#include "util/hash.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
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

// The count row of `hash` (blobs.hpp, blob_key()): how many entries it has counted; 0 when there
// is none, nullopt when its value is not a count (damage: the blob is kept, nothing counted, until
// a sweep counts again). An LMDB code in `rc` on failure.
std::optional<std::uint64_t> counted_users(MDB_txn* txn, MDB_dbi refs, std::string_view hash, int& rc)
{
  MDB_val k = val(hash);
  MDB_val v{};
  rc = mdb_get(txn, refs, &k, &v);
  if (rc == MDB_NOTFOUND) {
    rc = MDB_SUCCESS;
    return 0;
  }
  return rc == MDB_SUCCESS ? decode_users(view(v)) : std::optional<std::uint64_t>(0);
}

int set_users(MDB_txn* txn, MDB_dbi refs, std::string_view hash, std::uint64_t users)
{
  MDB_val k = val(hash);
  if (users == 0) {
    const int rc = mdb_del(txn, refs, &k, nullptr);
    return rc == MDB_NOTFOUND ? MDB_SUCCESS : rc;
  }
  const std::string count = encode_users(users);
  MDB_val v = val(count);
  return mdb_put(txn, refs, &k, &v, 0);
}

// Whether `hash` has users: a count row above 0, or a pair row (hash ‖ entry key) of an entry
// stored before counts; an LMDB code in `rc` on failure.
bool referenced(MDB_txn* txn, MDB_dbi refs, std::string_view hash, int& rc)
{
  MDB_cursor* cursor = nullptr;
  rc = mdb_cursor_open(txn, refs, &cursor);
  if (rc != MDB_SUCCESS) {
    return true;
  }
  MDB_val k = val(hash);
  MDB_val v{};
  int got = mdb_cursor_get(cursor, &k, &v, MDB_SET_RANGE);
  bool used = false;
  if (got == MDB_SUCCESS && view(k) == hash) {  // the count row sorts first (one not a count: kept)
    used = decode_users(view(v)).value_or(1) != 0;
    got = used ? got : mdb_cursor_get(cursor, &k, &v, MDB_NEXT);
  }
  used = used || (got == MDB_SUCCESS && view(k).size() > hash.size() && view(k).substr(0, hash.size()) == hash);
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

int add_users(MDB_txn* txn, const BlobDbis& dbis, const std::vector<std::string>& pairs)
{
  // Only an entry that is not stored yet counts (a key names its headers: an entry stored again
  // uses the blobs it used), and each of its blobs once (two headers of one content).
  std::set<std::string> fresh;
  std::set<std::string> seen;
  for (const std::string& pair : pairs) {
    if (pair.size() != 2 * k_blob_key_size) {
      continue;
    }
    const std::string entry = pair.substr(k_blob_key_size);
    if (seen.insert(entry).second) {
      MDB_val k = val(entry);
      MDB_val record{};
      const int rc = mdb_get(txn, dbis.entries, &k, &record);
      if (rc == MDB_NOTFOUND) {
        fresh.insert(entry);
      } else if (rc != MDB_SUCCESS) {
        return rc;
      }
    }
  }
  std::set<std::string> counted;
  for (const std::string& pair : pairs) {
    if (pair.size() != 2 * k_blob_key_size || fresh.count(pair.substr(k_blob_key_size)) == 0 ||
        !counted.insert(pair).second) {
      continue;
    }
    const std::string_view hash = std::string_view(pair).substr(0, k_blob_key_size);
    int rc = MDB_SUCCESS;
    const std::optional<std::uint64_t> users = counted_users(txn, dbis.refs, hash, rc);
    if (rc != MDB_SUCCESS || (users && (rc = set_users(txn, dbis.refs, hash, *users + 1)) != MDB_SUCCESS)) {
      return rc;
    }
  }
  return MDB_SUCCESS;
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
    // Its pair row, if it was stored before counts; else it is one of the count.
    const std::string pair_key = blob_ref_key(hash, key);
    MDB_val pair = val(pair_key);
    rc = mdb_del(txn, dbis.refs, &pair, nullptr);
    if (rc == MDB_NOTFOUND) {
      const std::optional<std::uint64_t> users = counted_users(txn, dbis.refs, blob, rc);
      if (rc == MDB_SUCCESS && users && *users > 0) {
        rc = set_users(txn, dbis.refs, blob, *users - 1);
      }
    }
    if (rc != MDB_SUCCESS) {
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
  if (rc != MDB_SUCCESS) {
    return rc;
  }
  // What the records use: each blob's number of entries (each record's blobs once).
  std::map<std::string, std::uint64_t> users;
  for (const std::string& key : entries) {
    MDB_val k = val(key);
    MDB_val record{};
    if ((rc = mdb_get(txn, dbis.entries, &k, &record)) != MDB_SUCCESS) {
      return rc;
    }
    std::string why;
    const auto hashes = header_blobs(view(record), why);
    if (!hashes) {
      continue;  // a record that can't be read holds no references
    }
    for (const util::Sha256& hash : *hashes) {
      ++users[blob_key(hash)];
    }
  }
  // The rows say exactly that, as counts: a pair row (before counts) goes, counted instead.
  std::vector<std::string> refs;
  if ((rc = keys_of(txn, dbis.refs, refs)) != MDB_SUCCESS) {
    return rc;
  }
  for (const std::string& ref : refs) {
    if (ref.size() == k_blob_key_size && users.count(ref) != 0) {
      continue;  // set below
    }
    // A pair row (its entry, if there, is counted below), or a count of a blob no record uses.
    if ((rc = del(txn, dbis.refs, ref)) != MDB_SUCCESS) {
      return rc;
    }
    ++report.refs_removed;
  }
  for (const auto& [hash, count] : users) {
    const std::optional<std::uint64_t> had = counted_users(txn, dbis.refs, hash, rc);
    if (rc != MDB_SUCCESS) {
      return rc;
    }
    if (had != count) {  // (nullopt too: a value that was not a count)
      if ((rc = set_users(txn, dbis.refs, hash, count)) != MDB_SUCCESS) {
        return rc;
      }
      ++report.refs_added;
    }
  }
  // Every blob is used.
  std::vector<std::string> blobs;
  if ((rc = keys_of(txn, dbis.blobs, blobs)) != MDB_SUCCESS) {
    return rc;
  }
  for (const std::string& blob : blobs) {
    if (users.count(blob) == 0) {
      if ((rc = del(txn, dbis.blobs, blob)) != MDB_SUCCESS) {
        return rc;
      }
      ++report.blobs_removed;
    }
  }
  return MDB_SUCCESS;
}

} // namespace kjit::store
