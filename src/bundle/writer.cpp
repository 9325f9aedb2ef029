// Bundle writer: header, sorted index, meta rows and records in one atomically written file.
#include "bundle/writer.hpp"

#include <kjit/error.hpp>

#include "util/file_size_signal.hpp"
#include "util/file.hpp"

#include <algorithm>
#include <ctime>
#include <sys/stat.h>

namespace kjit::bundle {

void write_bundle(const std::string& path, std::vector<Record> records, const std::vector<MetaRow>& meta,
                  std::uint32_t record_format)
{
  std::stable_sort(records.begin(), records.end(), [](const Record& a, const Record& b) { return a.key < b.key; });
  records.erase(std::unique(records.begin(), records.end(), [](const Record& a, const Record& b) { return a.key == b.key; }),
                records.end());
  if (records.size() > k_entries_max) {
    throw BundleError("a bundle holds at most " + std::to_string(k_entries_max) + " entries; " +
                        std::to_string(records.size()) + " were given",
                      path);
  }
  // Laid out in one buffer (records are moved in one by one), so the file costs its size once.
  std::vector<IndexEntry> index;
  std::uint64_t data_size = 0;
  for (const Record& record : records) {
    index.push_back({record.key, data_size, record.bytes.size()});
    data_size += record.bytes.size();
  }
  const std::string index_bytes = encode_index(index);
  const std::string meta_bytes = encode_meta(meta);
  if (meta_bytes.size() > k_meta_max) {  // a reader refuses it as damage: never written
    throw BundleError("a bundle's meta rows take at most " + std::to_string(k_meta_max) + " bytes; " +
                        std::to_string(meta_bytes.size()) + " were given",
                      path);
  }
  std::string file(k_header_size, '\0');
  file.reserve(k_header_size + index_bytes.size() + meta_bytes.size() + data_size);
  file += index_bytes;
  file += meta_bytes;
  const std::size_t data_start = file.size();
  for (Record& record : records) {
    file += record.bytes;
    std::string().swap(record.bytes);
  }
  Header header;
  header.record_format = record_format;
  header.entries = index.size();
  header.meta_size = meta_bytes.size();
  header.data_size = data_size;
  header.created_unix = static_cast<std::int64_t>(::time(nullptr));
  header.index_sum = util::checksum(index_bytes);
  header.meta_sum = util::checksum(meta_bytes);
  header.data_sum = util::checksum(std::string_view(file).substr(data_start));
  file.replace(0, k_header_size, encode_header(header));
  // The file is replaced by a rename: never do that to a device, a FIFO or a folder.
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    throw BundleError("cannot write the bundle " + path + ": it exists and is not a regular file", path);
  }
  const util::FileSizeSignalBlock no_sigxfsz;  // past ulimit -f: a BundleError, not the process killed
  if (const std::error_code error = util::write_file_atomic(path, file, 0644)) {
    throw BundleError("cannot write the bundle " + path + ": " + error.message(), path);
  }
}

} // namespace kjit::bundle
