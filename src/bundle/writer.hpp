// Writing a bundle file from records and meta rows.
#pragma once

#include "bundle/format.hpp"

#include <string>
#include <vector>

namespace kjit::bundle {

// One entry to bundle: its store key and its record bytes, exactly as the store holds them.
struct Record {
  util::Sha256 key{};
  std::string bytes;
};

// Writes the bundle to `path` atomically (temp file in the same folder, fsync, rename): a reader
// sees the old file or the whole new one. Records are sorted by key; duplicate keys keep the first.
// Throws BundleError naming the path if it can't be written.
void write_bundle(const std::string& path, std::vector<Record> records, const std::vector<MetaRow>& meta,
                  std::uint32_t record_format);

} // namespace kjit::bundle
