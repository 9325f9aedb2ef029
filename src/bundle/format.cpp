// Encoding and strict, bounds-checked decoding of a bundle's header, index and meta sections.
#include "bundle/format.hpp"
#include "util/bytes.hpp"

#include <algorithm>
#include <cstring>

namespace kjit::bundle {

namespace {

constexpr char k_magic[8] = {'K', 'J', 'I', 'T', 'P', 'A', 'C', 'K'};
constexpr std::size_t k_summed_header = k_header_size - 16;

using util::get_int;
using util::put_int;

void put_sum(std::string& out, const util::Checksum& sum)
{
  out.append(reinterpret_cast<const char*>(sum.data()), sum.size());
}

util::Checksum get_sum(std::string_view bytes, std::size_t offset)
{
  util::Checksum sum;
  std::memcpy(sum.data(), bytes.data() + offset, sum.size());
  return sum;
}

} // namespace

std::string encode_header(const Header& header)
{
  std::string out(k_magic, sizeof k_magic);
  put_int(out, header.format);
  put_int(out, header.record_format);
  put_int(out, header.entries);
  put_int(out, header.meta_size);
  put_int(out, header.data_size);
  put_int(out, header.created_unix);
  put_sum(out, header.index_sum);
  put_sum(out, header.meta_sum);
  put_sum(out, header.data_sum);
  put_sum(out, util::checksum(out));
  return out;
}

std::optional<Header> decode_header(std::string_view bytes, std::string& why)
{
  if (bytes.size() < k_header_size) {
    why = "too short for a bundle header (" + std::to_string(bytes.size()) + " bytes)";
    return std::nullopt;
  }
  if (std::memcmp(bytes.data(), k_magic, sizeof k_magic) != 0) {
    why = "not a kjit bundle (bad magic)";
    return std::nullopt;
  }
  Header header;
  header.format = get_int<std::uint32_t>(bytes, 8);
  if (header.format != k_format) {
    why = "bundle format " + std::to_string(header.format) + " (this kjit reads format " + std::to_string(k_format) + ")";
    return std::nullopt;
  }
  if (get_sum(bytes, k_summed_header) != util::checksum(bytes.substr(0, k_summed_header))) {
    why = "damaged bundle header (checksum mismatch)";
    return std::nullopt;
  }
  header.record_format = get_int<std::uint32_t>(bytes, 12);
  header.entries = get_int<std::uint64_t>(bytes, 16);
  header.meta_size = get_int<std::uint64_t>(bytes, 24);
  header.data_size = get_int<std::uint64_t>(bytes, 32);
  header.created_unix = get_int<std::int64_t>(bytes, 40);
  header.index_sum = get_sum(bytes, 48);
  header.meta_sum = get_sum(bytes, 64);
  header.data_sum = get_sum(bytes, 80);
  constexpr std::uint64_t k_limit = std::uint64_t{1} << 48;  // sizes beyond this are damage, not data
  if (header.entries > k_entries_max || header.meta_size > k_meta_max || header.data_size > k_limit) {
    why = "damaged bundle header (impossible sizes)";
    return std::nullopt;
  }
  return header;
}

std::string encode_index(const std::vector<IndexEntry>& index)
{
  std::string out;
  out.reserve(index.size() * k_index_entry_size);
  for (const IndexEntry& entry : index) {
    out.append(reinterpret_cast<const char*>(entry.entry_key.data()), entry.entry_key.size());
    put_int(out, entry.offset);
    put_int(out, entry.size);
  }
  return out;
}

std::optional<std::vector<IndexEntry>> decode_index(std::string_view bytes, std::uint64_t data_size, std::string& why)
{
  if (bytes.size() % k_index_entry_size != 0) {
    why = "damaged bundle index (size)";
    return std::nullopt;
  }
  std::vector<IndexEntry> index(bytes.size() / k_index_entry_size);
  for (std::size_t i = 0; i < index.size(); ++i) {
    const std::size_t at = i * k_index_entry_size;
    std::memcpy(index[i].entry_key.data(), bytes.data() + at, 32);
    index[i].offset = get_int<std::uint64_t>(bytes, at + 32);
    index[i].size = get_int<std::uint64_t>(bytes, at + 40);
    if (index[i].offset > data_size || index[i].size > data_size - index[i].offset) {
      why = "damaged bundle index (entry " + std::to_string(i) + " lies outside the data)";
      return std::nullopt;
    }
    if (i > 0 && !(index[i - 1].entry_key < index[i].entry_key)) {
      why = "damaged bundle index (keys out of order)";
      return std::nullopt;
    }
  }
  return index;
}

std::string encode_meta(const std::vector<MetaRow>& rows)
{
  std::string out;
  for (const MetaRow& row : rows) {
    put_int(out, static_cast<std::uint32_t>(row.key.size()));
    out += row.key;
    put_int(out, static_cast<std::uint32_t>(row.value.size()));
    out += row.value;
  }
  return out;
}

std::optional<std::vector<MetaRow>> decode_meta(std::string_view bytes, std::string& why)
{
  std::vector<MetaRow> rows;
  std::size_t at = 0;
  const auto take = [&](std::string& out) {
    if (bytes.size() - at < 4) {
      return false;
    }
    const auto length = get_int<std::uint32_t>(bytes, at);
    at += 4;
    if (bytes.size() - at < length) {
      return false;
    }
    out.assign(bytes.substr(at, length));
    at += length;
    return true;
  };
  while (at < bytes.size()) {
    MetaRow row;
    if (!take(row.key) || !take(row.value)) {
      why = "damaged bundle meta section";
      return std::nullopt;
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

} // namespace kjit::bundle
