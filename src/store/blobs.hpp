// Header contents stored once, by SHA-256, shared by every entry that uses them (record format 4).
//
//   blob = magic "KJITBLB\0" | u32 format (1) | u32 encoding (0 raw, 1 zstd) | u64 content size
//          | checksum[16] | payload          checksum = XXH3-128 of the 24 bytes before it ‖ payload
//
// The `blobs` table keys a blob by the SHA-256 of its content (checked again on read); the
// `blob_refs` table counts each blob's entries (its hash → u64) so that removing an entry removes
// the blobs no other entry uses, in the same transaction (Store::erase). Stores written before
// counts hold a row per (blob, entry) instead: both keep a blob (docs/cache-format.md).
#pragma once

#include "store/entry.hpp"
#include "store/store.hpp"
#include "util/hash.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kjit::store {

constexpr std::uint32_t k_blob_format = 1;
constexpr std::size_t k_blob_header_size = 40;

// The stored form of `content` (compressed when that is smaller).
std::string encode_blob(std::string_view content);

// The content of a stored blob whose key is `hash`: header, checksum, decompression and the
// content's SHA-256 all checked. nullopt with `why` for anything damaged.
std::optional<std::string> decode_blob(std::string_view bytes, const util::Sha256& hash, std::string& why);

// True if `bytes` is a blob whose framing and checksum hold (no decompression, no SHA-256): what
// a writer checks before keeping a blob that is already stored.
bool blob_intact(std::string_view bytes);

// The `blobs` key of a header hash (also its count row's key in `blob_refs`), and the key of
// (blob, entry): a Store::Row of `blob_refs` under it says the entry uses the blob (Store::put
// counts it), a row of a store written before counts.
constexpr std::size_t k_blob_key_size = 32;
std::string blob_key(const util::Sha256& hash);
std::string blob_ref_key(const util::Sha256& hash, std::string_view entry_key);
// A count row's value: the number of entries, u64 little-endian; nullopt for a value that is not
// one (damage): its blob is then kept until `kjit verify --repair` counts again.
std::string encode_users(std::uint64_t users);
std::optional<std::uint64_t> decode_users(std::string_view value);

// Appends the rows that store an entry's headers: one `blobs` row (raw content: Store::put
// encodes it unless it is there; entry.encoded_blobs' blob where it has one) and one `blob_refs`
// row (blob_ref_key(): Store::put counts it) per header. A header entry.header_refs names without
// its content gets the blob entry.encoded_blobs holds for it, or a `present` row: its blob must be
// stored already.
void add_header_rows(const Entry& entry, const util::Sha256& key, std::vector<Store::Row>& rows);

// Fills entry.headers with the content of every header_refs blob not already there. Returns false
// with `why` naming the first header whose blob is missing or damaged (the entry is then unusable
// for anything that needs the headers: mirror, export, cat). Don't call from inside a store visit.
bool load_headers(const Store& store, Entry& entry, std::string& why);

} // namespace kjit::store
