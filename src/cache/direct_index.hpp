// The input digest: XXH3-128 of a program's raw inputs, leading to its SHA-256 entry key without
// building or hashing the key texts (docs/cache-format.md, "The direct index").
#pragma once

#include <kjit/arch.hpp>
#include <kjit/program.hpp>

#include "cache/key.hpp"
#include "util/hash.hpp"

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace kjit::cache {

// Whether the key of `program` is a function of its inputs alone: nothing in it may name a disk
// header (no "include" anywhere, no -I, --include-path or pre-include option), so no manifest is
// read and no folder is checked (an -I folder may be removed since). Others go through prepare().
bool direct_eligible(const Program& program);
// The options part of direct_eligible() (cheap). Raw inputs found in memory or in a direct row
// were direct_eligible() when stored, and eligibility depends on nothing else: a lookup scans
// the texts for "include" only when neither knows them.
bool direct_options(const Program& program);
// Whether the source or an in-memory header of `program` holds the word "include" (#include,
// %:include, __has_include…), also when a line splice cuts it (`#inc\<newline>lude`).
bool mentions_include(const Program& program);

// The toolchain part of the inputs: every field of `context` that make_key_texts() puts in the key of
// a direct_eligible() program (so not the toolkit headers' fingerprint), and the record format,
// as one text (computed once per cache; asks for no fingerprint).
std::string inputs_toolchain(const KeyContext& context);

// The inputs of `program` on the resolved `arch` in `context_text`, as one unambiguous byte string
// (every field length-prefixed): equal strings make equal key texts, so equal entry keys.
std::string direct_inputs(const Program& program, const Arch& arch, std::string_view context_text);

// The LMDB key of a direct row: the 16 bytes of `input_digest`.
inline std::string_view input_digest_bytes(const util::Checksum& input_digest)
{
  return {reinterpret_cast<const char*>(input_digest.data()), input_digest.size()};
}

// The store's `direct` row: 16-byte XXH3-128 of the inputs → entry key (32 bytes) ‖ the inputs'
// length (u64, little-endian). The inputs themselves are in the entry's record (format 6), which
// a hit compares with the lookup's in full: the row is only a lead.
constexpr std::size_t k_direct_row_size = 40;
std::string direct_row(const util::Sha256& entry_key, std::size_t inputs_size);
// The entry key a row names for inputs of `inputs_size` bytes, else nullopt (inputs of another
// length, a row of another format, a damaged row): a lookup then takes the SHA-256 path.
std::optional<util::Sha256> direct_row_entry_key(std::string_view row, std::size_t inputs_size);

// This process's input digests (inputs → entry key), bounded by bytes; thread-safe.
class DirectIndex {
public:
  // The entry key recorded for exactly `inputs` under `input_digest`, or nullopt.
  std::optional<util::Sha256> find(const util::Checksum& input_digest, std::string_view inputs) const;
  void insert(const util::Checksum& input_digest, std::string inputs, const util::Sha256& entry_key);
  void clear();

private:
  static constexpr std::size_t k_limit_bytes = std::size_t(64) << 20;  // then it starts over
  struct Known {
    std::string inputs;
    util::Sha256 entry_key;
  };
  mutable std::mutex m_mutex;
  std::map<util::Checksum, Known> m_known;
  std::size_t m_bytes = 0;
};

} // namespace kjit::cache
