// The file-per-entry baseline: how CuPy and cuda.core keep kernels — one file per key in folders
// sharded by hash prefix, written with temp file + rename, read back with hash verification.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace bench {

class FileStore {
public:
  explicit FileStore(std::string dir) : m_dir(std::move(dir)) {}
  // Writes sha256(payload) ‖ payload to <dir>/<hex[0:2]>/<hex[2:]> atomically.
  void put(const std::string& hex_key, std::string_view payload) const;
  // The payload if the file exists and its hash matches.
  std::optional<std::string> get(const std::string& hex_key) const;

private:
  std::string path_of(const std::string& hex_key) const { return m_dir + "/" + hex_key.substr(0, 2) + "/" + hex_key.substr(2); }
  std::string m_dir;
};

} // namespace bench
