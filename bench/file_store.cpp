// File-per-entry baseline store.
#include "file_store.hpp"

#include "util/file.hpp"
#include "util/hash.hpp"

#include <cstring>
#include <tuple>
#include <sys/stat.h>

namespace bench {

void FileStore::put(const std::string& hex_key, std::string_view payload) const
{
  ::mkdir(m_dir.c_str(), 0700);
  ::mkdir((m_dir + "/" + hex_key.substr(0, 2)).c_str(), 0700);
  const kjit::util::Sha256 hash = kjit::util::sha256(payload);
  std::string bytes(reinterpret_cast<const char*>(hash.data()), hash.size());
  bytes += payload;
  std::ignore = kjit::util::write_file_atomic(path_of(hex_key), bytes);
}

std::optional<std::string> FileStore::get(const std::string& hex_key) const
{
  std::error_code error;
  auto bytes = kjit::util::read_file(path_of(hex_key), error);
  if (!bytes || bytes->size() < 32) {
    return std::nullopt;
  }
  const kjit::util::Sha256 hash = kjit::util::sha256(std::string_view(*bytes).substr(32));
  if (std::memcmp(hash.data(), bytes->data(), 32) != 0) {
    return std::nullopt;
  }
  return bytes->substr(32);
}

} // namespace bench
