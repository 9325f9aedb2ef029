// The blob tables inside one LMDB write transaction: storing a blob once, releasing the blobs of
// an entry that is deleted, and sweeping. Private to src/store/ (raw LMDB types).
#pragma once

#include "store/store.hpp"

#include <lmdb.h>
#include <string>
#include <string_view>
#include <vector>

namespace kjit::store {

struct BlobDbis {
  MDB_dbi entries;
  MDB_dbi blobs;
  MDB_dbi refs;
};

// Stores `content` under `hash` (encode_blob(), or as it is when `encoded` says it is that
// already) unless an intact blob is already there. Returns an LMDB code.
int put_blob(MDB_txn* txn, MDB_dbi blobs, std::string_view hash, std::string_view content, bool encoded = false);
// Requires an intact blob under `hash` (a Store::Row::present row): one not there is stored from
// the file at `path` if that hashes to `hash`; else MDB_NOTFOUND. Returns an LMDB code.
int require_blob(MDB_txn* txn, MDB_dbi blobs, std::string_view hash, const std::string& path);

// Counts the users of blobs: `pairs` are blob_ref_key()s (blob ‖ entry) of the entries a write
// stores; each entry not stored before adds one to the count of each of its blobs. Call before
// the write puts the entries. Returns an LMDB code.
int add_users(MDB_txn* txn, const BlobDbis& dbis, const std::vector<std::string>& pairs);

// Call before deleting entry `key`: takes it from the users of its blobs (its pair rows, where it
// was stored before counts) and deletes every blob that has none left. A record that can't be read
// holds no references (sweep_blobs() finds what it leaves). Returns an LMDB code.
int release_blobs(MDB_txn* txn, const BlobDbis& dbis, std::string_view key);

// Makes `blob_refs` count exactly what the records use (pair rows become counts) and deletes the
// blobs none uses (Store::sweep_blobs()).
int sweep_blobs(MDB_txn* txn, const BlobDbis& dbis, Store::BlobSweep& report);

} // namespace kjit::store
