// Bundle reader: refuses damaged or truncated files at open, reads records with pread.
#include "bundle/reader.hpp"

#include <kjit/error.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace kjit::bundle {

Reader::Reader(const std::string& path) : m_path(path)
{
  // O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused just below).
  m_fd = util::UniqueFd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!m_fd) {
    throw BundleError("cannot open the bundle " + path + ": " + std::strerror(errno), path);
  }
  struct stat st {};
  if (::fstat(m_fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    throw BundleError("the bundle " + path + " is not a regular file", path);
  }
  const auto file_size = static_cast<std::uint64_t>(st.st_size);
  std::string why;
  const std::string header_bytes = read_at(0, std::min<std::uint64_t>(k_header_size, file_size));
  const auto header = decode_header(header_bytes, why);
  if (!header) {
    throw BundleError("the bundle " + path + " is damaged: " + why, path);
  }
  m_header = *header;
  if (file_size != m_header.file_size()) {
    throw BundleError("the bundle " + path + " is damaged: " + std::to_string(file_size) + " bytes, the header says " +
                        std::to_string(m_header.file_size()) + (file_size < m_header.file_size() ? " (truncated)" : ""),
                      path);
  }
  const std::string index_bytes = read_at(k_header_size, m_header.index_size());
  const std::string meta_bytes = read_at(k_header_size + m_header.index_size(), m_header.meta_size);
  if (util::checksum(index_bytes) != m_header.index_sum || util::checksum(meta_bytes) != m_header.meta_sum) {
    throw BundleError("the bundle " + path + " is damaged: index or meta checksum mismatch", path);
  }
  auto index = decode_index(index_bytes, m_header.data_size, why);
  auto meta = index ? decode_meta(meta_bytes, why) : std::nullopt;
  if (!index || !meta) {
    throw BundleError("the bundle " + path + " is damaged: " + why, path);
  }
  m_index = std::move(*index);
  m_meta = std::move(*meta);
}

const IndexEntry* Reader::find(const util::Sha256& key) const
{
  const auto it = std::lower_bound(m_index.begin(), m_index.end(), key,
                                   [](const IndexEntry& entry, const util::Sha256& k) { return entry.entry_key < k; });
  return it != m_index.end() && it->entry_key == key ? &*it : nullptr;
}

std::string Reader::read(const IndexEntry& entry) const
{
  return read_at(k_header_size + m_header.index_size() + m_header.meta_size + entry.offset, entry.size);
}

void Reader::verify_data() const
{
  // A piece at a time: the memory a check takes does not grow with the file (a hostile or
  // sparse bundle declaring gigabytes).
  constexpr std::uint64_t k_piece = std::uint64_t{1} << 20;
  std::uint64_t at = k_header_size + m_header.index_size() + m_header.meta_size;
  const std::uint64_t end = at + m_header.data_size;
  std::string piece;
  const util::Checksum sum = util::checksum_of_parts([&]() -> std::string_view {
    piece = at < end ? read_at(at, std::min(k_piece, end - at)) : std::string();
    at += piece.size();
    return piece;
  });
  if (sum != m_header.data_sum) {
    throw BundleError("the bundle " + m_path + " is damaged: data checksum mismatch", m_path);
  }
}

std::string Reader::read_at(std::uint64_t offset, std::uint64_t size) const
{
  std::string out(size, '\0');
  std::uint64_t done = 0;
  while (done < size) {
    const ssize_t got = ::pread(m_fd.get(), out.data() + done, size - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) {
      continue;
    }
    if (got <= 0) {
      throw BundleError("cannot read the bundle " + m_path + ": " + (got < 0 ? std::strerror(errno) : "unexpected end of file"),
                        m_path);
    }
    done += static_cast<std::uint64_t>(got);
  }
  return out;
}

} // namespace kjit::bundle
