// What one cache entry holds: the key texts, the inputs, and either a binary or a remembered failure.
#pragma once

#include <kjit/binary.hpp>

#include "util/hash.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace kjit::store {

enum class EntryKind : std::uint32_t {
  binary = 1,   // a successful compile
  failure = 2,  // the compiler rejected the program; `binary.log` holds its log
};

// A header of an entry as its record names it: the content is stored once, by hash, in the
// `blobs` table (format 4), shared by every entry that uses it.
struct HeaderRef {
  std::string name;
  util::Sha256 hash{};
  std::uint64_t size = 0;
  bool operator==(const HeaderRef& other) const
  {
    return name == other.name && hash == other.hash && size == other.size;
  }
};

struct Entry {
  EntryKind kind = EntryKind::binary;
  std::string program_name;
  std::string program_txt;
  std::string options_txt;
  std::string source;
  // Header name → content. Encoding takes the contents from here; a decoded record holds only
  // the headers stored inline (bundles): the rest are filled in by load_headers() (blobs.hpp).
  std::map<std::string, std::string> headers;
  std::vector<HeaderRef> header_refs;  // decoded: every header's (name, hash, size), by name
  std::vector<std::string> options;  // exactly what NVRTC was given
  Binary binary;
  std::string ltoir;                 // only when dump_ir was on
  // Format 6: the raw inputs of a direct-eligible program (cache/direct_index.hpp), which a hit
  // through its direct row compares in full; empty for other programs.
  std::string direct_inputs;
  std::string manifest_key;          // 32 bytes: the manifest key of its manifest (docs/keys.md); empty if none
  std::int64_t created_unix = 0;
  // Not stored as such: encode_blob() of header contents by their hash, made while the compile
  // ran (cache/speculation.hpp), which add_header_rows() stores instead of encoding on the
  // writer's thread (a vendored CCCL's 13.7 MB: ≈ 35 ms of zstd inside the write transaction).
  std::map<util::Sha256, std::string> encoded_blobs;
};

// The SHA-256 of each header's content when it is written: the entry's HeaderRef for that name
// where it has one (a compile fills them with the hashes its resolver made when it read the
// headers), else computed. A vendored CCCL's 13.7 MB were hashed again by the record, the blob
// rows and the mirror (≈ 12 ms each).
class HeaderHashes {
public:
  explicit HeaderHashes(const Entry& entry)
  {
    for (const HeaderRef& ref : entry.header_refs) {
      m_known.emplace(ref.name, &ref);
    }
  }
  util::Sha256 of(const std::string& name, const std::string& content) const
  {
    const auto it = m_known.find(name);
    return it != m_known.end() && it->second->size == content.size() ? it->second->hash : util::sha256(content);
  }

private:
  std::map<std::string_view, const HeaderRef*> m_known;
};

} // namespace kjit::store
