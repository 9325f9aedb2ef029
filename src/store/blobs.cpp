// Header blobs: their encoding, the rows that store them, and loading an entry's headers back.
#include "store/blobs.hpp"

#include "store/compress.hpp"
#include "util/bytes.hpp"

#include <cstring>

namespace kjit::store {

namespace {

constexpr char k_blob_magic[8] = {'K', 'J', 'I', 'T', 'B', 'L', 'B', '\0'};

using util::get_int;
using util::put_int;

util::Checksum blob_checksum(std::string_view head, std::string_view payload)
{
  return util::checksum(head, payload);  // of head ‖ payload, without a copy of them
}

// Framing and checksum checked: the encoding and the payload, or nullopt with `why`.
std::optional<std::pair<std::uint32_t, std::string_view>> open_blob(std::string_view bytes, std::uint64_t& size,
                                                                    std::string& why)
{
  if (bytes.size() < k_blob_header_size) {
    why = "blob shorter than its header (" + std::to_string(bytes.size()) + " bytes)";
    return std::nullopt;
  }
  if (std::memcmp(bytes.data(), k_blob_magic, sizeof k_blob_magic) != 0) {
    why = "bad blob magic";
    return std::nullopt;
  }
  if (const auto format = get_int<std::uint32_t>(bytes, 8); format != k_blob_format) {
    why = "blob format " + std::to_string(format) + ", expected " + std::to_string(k_blob_format);
    return std::nullopt;
  }
  const auto encoding = get_int<std::uint32_t>(bytes, 12);
  size = get_int<std::uint64_t>(bytes, 16);
  const std::string_view payload = bytes.substr(k_blob_header_size);
  const util::Checksum sum = blob_checksum(bytes.substr(0, 24), payload);
  if (std::memcmp(sum.data(), bytes.data() + 24, sum.size()) != 0) {
    why = "blob checksum mismatch";
    return std::nullopt;
  }
  if (encoding > 1 || (encoding == 0 && payload.size() != size) || size > k_expand_max) {
    why = "bad blob encoding " + std::to_string(encoding) + " for " + std::to_string(size) + " bytes";
    return std::nullopt;
  }
  return std::make_pair(encoding, payload);
}

} // namespace

std::string encode_blob(std::string_view content)
{
  const std::optional<std::string> packed = compress(content);
  std::string out(k_blob_magic, sizeof k_blob_magic);
  put_int(out, k_blob_format);
  put_int(out, static_cast<std::uint32_t>(packed ? 1 : 0));
  put_int(out, static_cast<std::uint64_t>(content.size()));
  const std::string_view payload = packed ? std::string_view(*packed) : content;
  const util::Checksum sum = blob_checksum(out, payload);
  out.append(reinterpret_cast<const char*>(sum.data()), sum.size());
  out.append(payload);
  return out;
}

bool blob_intact(std::string_view bytes)
{
  std::uint64_t size = 0;
  std::string why;
  return open_blob(bytes, size, why).has_value();
}

std::optional<std::string> decode_blob(std::string_view bytes, const util::Sha256& hash, std::string& why)
{
  std::uint64_t size = 0;
  const auto opened = open_blob(bytes, size, why);
  if (!opened) {
    return std::nullopt;
  }
  std::string content;
  if (opened->first == 0) {
    content.assign(opened->second);
  } else if (!decompress(opened->second, static_cast<std::size_t>(size), content, why)) {
    return std::nullopt;
  }
  if (util::sha256(content) != hash) {
    why = "blob content does not match its hash";
    return std::nullopt;
  }
  return content;
}

std::string blob_key(const util::Sha256& hash)
{
  return std::string(reinterpret_cast<const char*>(hash.data()), hash.size());
}

std::string blob_ref_key(const util::Sha256& hash, std::string_view entry_key)
{
  return blob_key(hash) + std::string(entry_key);
}

std::string encode_users(std::uint64_t users)
{
  std::string out;
  put_int(out, users);
  return out;
}

std::optional<std::uint64_t> decode_users(std::string_view value)
{
  if (value.size() != sizeof(std::uint64_t)) {
    return std::nullopt;
  }
  return get_int<std::uint64_t>(value, 0);
}

void add_header_rows(const Entry& entry, const util::Sha256& key, std::vector<Store::Row>& rows)
{
  const std::string entry_key = blob_key(key);
  const HeaderHashes hashes(entry);
  for (const auto& [name, content] : entry.headers) {
    const util::Sha256 hash = hashes.of(name, content);
    const auto encoded = entry.encoded_blobs.find(hash);
    if (encoded != entry.encoded_blobs.end()) {
      rows.push_back({Table::blobs, blob_key(hash), encoded->second, true});
    } else {
      rows.push_back({Table::blobs, blob_key(hash), content});
    }
    rows.push_back({Table::blob_refs, blob_ref_key(hash, entry_key), "1"});
  }
  // A header known by reference only (its text let go while NVRTC compiled:
  // deps::Resolver::shed_texts()): its blob encoded ahead, or one the store must still hold.
  for (const HeaderRef& ref : entry.header_refs) {
    if (entry.headers.count(ref.name) != 0) {
      continue;
    }
    const auto encoded = entry.encoded_blobs.find(ref.hash);
    if (encoded != entry.encoded_blobs.end()) {
      rows.push_back({Table::blobs, blob_key(ref.hash), encoded->second, true});
    } else {
      rows.push_back({Table::blobs, blob_key(ref.hash), "/" + ref.name, false, true});  // (the name is its path)
    }
    rows.push_back({Table::blob_refs, blob_ref_key(ref.hash, entry_key), "1"});
  }
}

bool load_headers(const Store& store, Entry& entry, std::string& why)
{
  for (const HeaderRef& ref : entry.header_refs) {
    if (entry.headers.count(ref.name) != 0) {
      continue;
    }
    std::optional<std::string> content;
    std::string damage;
    const bool found = store.visit(Table::blobs, blob_key(ref.hash), [&](std::string_view bytes) {
      content = decode_blob(bytes, ref.hash, damage);
    });
    const std::string blob = util::to_hex(ref.hash).substr(0, 16);
    if (!found) {
      why = "the content of its header " + ref.name + " (blob " + blob + ") is missing from the store";
      return false;
    }
    if (!content) {
      why = "the content of its header " + ref.name + " (blob " + blob + ") is damaged: " + damage;
      return false;
    }
    entry.headers.emplace(ref.name, std::move(*content));
  }
  return true;
}

} // namespace kjit::store
