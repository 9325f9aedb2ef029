// Reading a bundle file: its header, index and meta at open; records on demand with pread.
#pragma once

#include "bundle/format.hpp"
#include "util/unique_handle.hpp"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace kjit::bundle {

// A bundle opened read-only. Thread-safe after construction (records are read with pread).
class Reader {
public:
  // Opens `path` and checks its header, index and meta sections and that the file has exactly
  // the declared size (a truncated or extended file is refused). The records themselves are
  // checked when read (store::decode_record) or all at once by verify_data(). Throws
  // BundleError naming the path and the damage.
  explicit Reader(const std::string& path);

  const std::string& path() const noexcept { return m_path; }
  const Header& header() const noexcept { return m_header; }
  const std::vector<IndexEntry>& index() const noexcept { return m_index; }
  const std::vector<MetaRow>& meta() const noexcept { return m_meta; }

  // The index entry for `key` (binary search), or nullptr.
  const IndexEntry* find(const util::Sha256& key) const;
  // The record bytes of an index entry. Throws BundleError if the file can't be read.
  std::string read(const IndexEntry& entry) const;
  // Reads the whole data section (a piece at a time) and compares it with the header's sum.
  // Throws BundleError.
  void verify_data() const;

private:
  std::string read_at(std::uint64_t offset, std::uint64_t size) const;
  std::string m_path;
  util::UniqueFd m_fd;
  Header m_header;
  std::vector<IndexEntry> m_index;
  std::vector<MetaRow> m_meta;
};

} // namespace kjit::bundle
