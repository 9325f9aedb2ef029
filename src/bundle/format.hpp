// The bundle file: a portable, checksummed, versioned file of cache entries (grammar in
// docs/cache-format.md, "Bundle format"):
//
//   bundle = header index meta data
//   header = magic "KJITPACK" | u32 format | u32 record format | u64 entries | u64 meta size
//            | u64 data size | i64 created | sum(index)[16] | sum(meta)[16] | sum(data)[16]
//            | sum(header so far)[16]
//   index  = entries × (key[32] | u64 offset in data | u64 size)   sorted by key, no duplicates
//   meta   = (u32 length | key | u32 length | value)*               store meta rows (toolchains,
//                                                                    scripts and their tables)
//   data   = records, exactly as the store holds them
//
// Integers little-endian; sums are XXH3-128. The file size must equal the sizes it declares.
#pragma once

#include "util/hash.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kjit::bundle {

constexpr std::uint32_t k_format = 1;
constexpr std::size_t k_header_size = 112;
constexpr std::size_t k_index_entry_size = 48;
// The meta section holds the toolchain rows (a few hundred bytes each) and is read whole when a
// bundle is opened, in the host's process for a tier: a larger one is damage, never read.
constexpr std::uint64_t k_meta_max = std::uint64_t{16} << 20;
// The index is read whole (and decoded into as much again) when a bundle is opened, also by the
// tier in a host's process: more entries than this (192 MiB of index; a bundle's records are
// laid out in memory when it is written, so no export comes near it) is damage, never read.
constexpr std::uint64_t k_entries_max = std::uint64_t{1} << 22;

struct Header {
  std::uint32_t format = k_format;
  std::uint32_t record_format = 0;
  std::uint64_t entries = 0;
  std::uint64_t meta_size = 0;
  std::uint64_t data_size = 0;
  std::int64_t created_unix = 0;
  util::Checksum index_sum{};
  util::Checksum meta_sum{};
  util::Checksum data_sum{};

  std::uint64_t index_size() const { return entries * k_index_entry_size; }
  std::uint64_t file_size() const { return k_header_size + index_size() + meta_size + data_size; }
};

struct IndexEntry {
  util::Sha256 entry_key{};
  std::uint64_t offset = 0;  // in the data section
  std::uint64_t size = 0;
};

struct MetaRow {
  std::string key;
  std::string value;
};

std::string encode_header(const Header& header);
// Checks magic, format, the header's own sum and size limits; nullopt with `why` otherwise.
std::optional<Header> decode_header(std::string_view bytes, std::string& why);

std::string encode_index(const std::vector<IndexEntry>& index);
// Checks order, uniqueness and that every record lies inside the data section.
std::optional<std::vector<IndexEntry>> decode_index(std::string_view bytes, std::uint64_t data_size, std::string& why);

std::string encode_meta(const std::vector<MetaRow>& rows);
std::optional<std::vector<MetaRow>> decode_meta(std::string_view bytes, std::string& why);

} // namespace kjit::bundle
