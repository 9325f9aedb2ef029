// The byte format of an entry in LMDB (grammar in docs/cache-format.md):
//
//   record    = magic "KJITREC\0" | u32 format | u32 kind
//               | u64 artifacts size | checksum[16] | u64 inputs size | checksum[16]
//               | artifacts | inputs
//   artifacts checksum = XXH3-128 of (format | kind | artifacts): every byte that decides what a
//   lookup returns is under it (format 3; in format 2 the kind byte was not)
//   artifacts = field*   what a lookup returns: key, arch, PTX, cubin, lowered names, log, …
//   inputs    = field*   what made it: key texts, source, header names and hashes, LTO IR
//   field     = u16 tag | u32 length | bytes          checksum = XXH3-128 of the section
//   tag bit 15 set: the bytes are one zstd frame of the value (format 4; text fields only)
//   headers (format 4): name + (sha256, size); the content is a blob, stored once (blobs.hpp)
//   PTX (format 5): stored plain below 16 KiB, a zstd frame from there (a hit expands it)
//   inputs (format 6): first the raw inputs of a direct-eligible program (a direct row holds only
//   the entry key and their length) and the key of the manifest that leads to the entry
//
// A hit reads and verifies only the artifacts (the entry key inside must equal the LMDB key);
// the inputs are read for the mirror, explain and orphans. Integers are little-endian; unknown
// tags are an error.
#pragma once

#include "store/entry.hpp"
#include "util/hash.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kjit::store {

constexpr std::uint32_t k_record_format = 6;
constexpr std::size_t k_record_header_size = 64;

// How a record holds its headers' contents (format 4).
enum class HeaderStorage {
  blobs,           // (name, sha256, size) only: the contents are blobs (blobs.hpp), stored once
  inline_content,  // the contents inside the record: a self-contained record (bundles)
};

// `key` is the entry's LMDB key (the SHA-256 of its key texts). Headers come from entry.headers
// and, for names not there, entry.header_refs (whose contents must then be blobs: inline_content
// throws StoreError). Text fields are zstd-compressed when that makes them smaller.
std::string encode_record(const Entry& entry, const util::Sha256& key,
                          HeaderStorage storage = HeaderStorage::blobs);

// `inputs` checks the inputs section only (for header_blobs()); decode_record takes the others.
enum class Sections { artifacts, all, inputs };

// How much of the cubin decode_record checks beyond the artifacts checksum.
enum class CubinCheck {
  full,    // the whole ELF structure (rtc::ElfView): records from a bundle, a remote, an import
  header,  // the ELF header, SM and table ranges only (rtc::parse_elf_header): records of the
           // local store, which only ever takes a cubin that passed `full` (compiled, or decoded
           // from a tier before it is stored); the checksum proves the bytes are those
};

// Decodes and verifies the record stored under `key`: magic, format, sizes, checksums, fields,
// the entry key, the cubin (as `cubin` says); with Sections::all the inputs too. Returns nullopt
// with the reason in `why` for anything damaged: such a record must never be used.
std::optional<Entry> decode_record(std::string_view bytes, const util::Sha256& key, Sections sections, std::string& why,
                                   CubinCheck cubin = CubinCheck::full);
// True if `why`, from decode_record, says only that another kjit version wrote the record (its
// format number differs): sound for that version, not damage.
bool of_another_format(std::string_view why);

// The first fields of a record, read without verifying the checksums (for listings such as the
// mirror's index.txt, never for lookups); nullopt if its framing can't be read.
struct RecordSummary {
  EntryKind kind;
  std::string program_name;
  std::string arch;
  std::int64_t created_unix;
};
std::optional<RecordSummary> summarize_record(std::string_view bytes);

// A field the inputs section of a record starts with (format 6), found without verifying any
// checksum (the framing is bounds-checked): the caller compares it with what it expects, so a
// damaged field can only fail to match. nullopt if the record has no such field.
enum class InputField {
  direct_inputs,  // the raw inputs its direct row leads here by: a hit compares them in full
  manifest_key,   // 32 bytes: the manifest key of the manifest that leads here
};
std::optional<std::string_view> input_field(std::string_view bytes, InputField field);

// The header blobs a record refers to, each once, in order (its inputs section checked), or
// nullopt with `why` for a record that can't be read (another format, damaged inputs): such a
// record holds no references.
std::optional<std::vector<util::Sha256>> header_blobs(std::string_view bytes, std::string& why);

} // namespace kjit::store
