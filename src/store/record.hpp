// The byte format of an entry in LMDB (grammar in docs/cache-format.md):
//
//   record    = magic "KJITREC\0" | u32 format | u32 kind
//               | u64 artifacts size | checksum[16] | u64 inputs size | checksum[16]
//               | artifacts | inputs
//   artifacts checksum = XXH3-128 of (format | kind | artifacts): every byte that decides what a
//   lookup returns is under it (format 3; in format 2 the kind byte was not)
//   artifacts = field*   what a lookup returns: key, arch, PTX, cubin, lowered names, log, …
//   inputs    = field*   what made it: key texts, source, headers, LTO IR
//   field     = u16 tag | u32 length | bytes          checksum = XXH3-128 of the section
//
// A hit reads and verifies only the artifacts (the key digest inside must equal the LMDB key);
// the inputs are read for the mirror, explain and orphans. Integers are little-endian; unknown
// tags are an error.
#pragma once

#include "store/entry.hpp"
#include "util/hash.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace kjit::store {

constexpr std::uint32_t k_record_format = 3;
constexpr std::size_t k_record_header_size = 64;

// `key` is the entry's LMDB key (the SHA-256 of its key texts).
std::string encode_record(const Entry& entry, const util::Sha256& key);

enum class Sections { artifacts, all };

// Decodes and verifies the record stored under `key`: magic, format, sizes, checksums, fields,
// the key digest, the cubin header; with Sections::all the inputs too. Returns nullopt with the
// reason in `why` for anything damaged: such a record must never be used.
std::optional<Entry> decode_record(std::string_view bytes, const util::Sha256& key, Sections sections, std::string& why);

} // namespace kjit::store
