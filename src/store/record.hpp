// The byte format of an entry in LMDB (grammar in docs/cache-format.md):
//
//   record  = magic "KJITREC\0" | u32 format | u32 kind | u64 payload size | checksum[16] | payload
//   payload = field*            field = u16 tag | u32 length | bytes
//   checksum = XXH3-128 of payload
//
// All integers little-endian. Unknown tags are an error: the format version says what may appear.
#pragma once

#include "store/entry.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace kjit::store {

constexpr std::uint32_t k_record_format = 1;
constexpr std::size_t k_record_header_size = 40;

std::string encode_record(const Entry& entry);

// Decodes and verifies (magic, format, size, checksum, fields, cubin header). Returns nullopt with
// the reason in `why` for anything damaged: such a record must never be used.
std::optional<Entry> decode_record(std::string_view bytes, std::string& why);

} // namespace kjit::store
