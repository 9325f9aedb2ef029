// Record encoding and strict, bounds-checked decoding.
#include "store/record.hpp"
#include "util/bytes.hpp"

#include "util/hash.hpp"

#include <kjit/arch.hpp>
#include <kjit/cubin.hpp>
#include <kjit/error.hpp>

#include <cstring>
#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t on the stack
#include <xxhash.h>

namespace kjit::store {

namespace {

constexpr char k_magic[8] = {'K', 'J', 'I', 'T', 'R', 'E', 'C', '\0'};

enum class Tag : std::uint16_t {
  program_name = 1,
  program_txt,
  options_txt,
  source,
  header_name,
  header_content,
  option,
  arch,
  ptx,
  cubin,
  lowered_expression,
  lowered_name,
  log,
  timings,
  ltoir,
  created_unix,
  key,
  cubin_path,
};

using util::get_int;
using util::put_int;

void put_field(std::string& out, Tag tag, std::string_view value)
{
  put_int(out, static_cast<std::uint16_t>(tag));
  put_int(out, static_cast<std::uint32_t>(value.size()));
  out.append(value);
}

std::string pack_doubles(std::initializer_list<double> values)
{
  std::string out;
  for (double value : values) {
    put_int(out, value);
  }
  return out;
}

// XXH3-128 of the header's format and kind bytes followed by the artifacts, canonical byte order.
util::Checksum artifacts_checksum(std::string_view format_and_kind, std::string_view artifacts)
{
  XXH3_state_t state;
  XXH3_INITSTATE(&state);
  XXH3_128bits_reset(&state);
  XXH3_128bits_update(&state, format_and_kind.data(), format_and_kind.size());
  XXH3_128bits_update(&state, artifacts.data(), artifacts.size());
  XXH128_canonical_t canonical;
  XXH128_canonicalFromHash(&canonical, XXH3_128bits_digest(&state));
  util::Checksum sum;
  std::memcpy(sum.data(), canonical.digest, sum.size());
  return sum;
}

} // namespace

std::string encode_record(const Entry& entry, const util::Sha256& key)
{
  std::string artifacts;
  artifacts.reserve(entry.binary.ptx.size() + entry.binary.cubin.size() + entry.binary.log.size() + 512);
  put_field(artifacts, Tag::key, std::string_view(reinterpret_cast<const char*>(key.data()), key.size()));
  put_field(artifacts, Tag::program_name, entry.program_name);
  put_field(artifacts, Tag::arch, entry.binary.arch);
  put_field(artifacts, Tag::ptx, entry.binary.ptx);
  put_field(artifacts, Tag::cubin, entry.binary.cubin);
  put_field(artifacts, Tag::cubin_path, entry.binary.cubin_path);
  for (const auto& [expression, lowered] : entry.binary.lowered_names) {
    put_field(artifacts, Tag::lowered_expression, expression);
    put_field(artifacts, Tag::lowered_name, lowered);
  }
  put_field(artifacts, Tag::log, entry.binary.log);
  for (const auto& option : entry.options) {
    put_field(artifacts, Tag::option, option);
  }
  const StageTimings& t = entry.binary.timings;
  put_field(artifacts, Tag::timings, pack_doubles({t.load_ms, t.nvrtc_ms, t.link_ms, t.total_ms}));
  std::string created;
  put_int(created, entry.created_unix);
  put_field(artifacts, Tag::created_unix, created);

  std::string inputs;
  inputs.reserve(entry.program_txt.size() + entry.options_txt.size() + 256);
  put_field(inputs, Tag::program_txt, entry.program_txt);
  put_field(inputs, Tag::options_txt, entry.options_txt);
  for (const auto& [name, content] : entry.headers) {
    put_field(inputs, Tag::header_name, name);
    put_field(inputs, Tag::header_content, content);
  }
  if (!entry.ltoir.empty()) {
    put_field(inputs, Tag::ltoir, entry.ltoir);
  }

  std::string record(k_magic, sizeof k_magic);
  put_int(record, k_record_format);
  put_int(record, static_cast<std::uint32_t>(entry.kind));
  const std::string format_and_kind = record.substr(8, 8);
  for (const std::string* section : {&artifacts, &inputs}) {
    put_int(record, static_cast<std::uint64_t>(section->size()));
    const util::Checksum sum =
      section == &artifacts ? artifacts_checksum(format_and_kind, artifacts) : util::checksum(*section);
    record.append(reinterpret_cast<const char*>(sum.data()), sum.size());
  }
  record += artifacts;
  record += inputs;
  return record;
}

namespace {

// Parses the fields of one verified section into `entry`; false with `why` on a malformed field.
bool parse_fields(std::string_view section, Entry& entry, std::string& key, std::string& why)
{
  std::string pending_header;
  std::string pending_expression;
  std::size_t at = 0;
  while (at < section.size()) {
    if (section.size() - at < 6) {
      why = "field header cut short";
      return false;
    }
    const auto tag = static_cast<Tag>(get_int<std::uint16_t>(section, at));
    const auto length = get_int<std::uint32_t>(section, at + 2);
    at += 6;
    if (section.size() - at < length) {
      why = "field runs past the end";
      return false;
    }
    std::string value(section.substr(at, length));
    at += length;
    switch (tag) {
    case Tag::key: key = std::move(value); break;
    case Tag::program_name: entry.program_name = std::move(value); break;
    case Tag::program_txt: entry.program_txt = std::move(value); break;
    case Tag::options_txt: entry.options_txt = std::move(value); break;
    case Tag::source: entry.source = std::move(value); break;
    case Tag::header_name: pending_header = std::move(value); break;
    case Tag::header_content: entry.headers[pending_header] = std::move(value); break;
    case Tag::option: entry.options.push_back(std::move(value)); break;
    case Tag::arch: entry.binary.arch = std::move(value); break;
    case Tag::ptx: entry.binary.ptx = std::move(value); break;
    case Tag::cubin: entry.binary.cubin = std::move(value); break;
    case Tag::cubin_path: entry.binary.cubin_path = std::move(value); break;
    case Tag::lowered_expression: pending_expression = std::move(value); break;
    case Tag::lowered_name: entry.binary.lowered_names.emplace_back(pending_expression, std::move(value)); break;
    case Tag::log: entry.binary.log = std::move(value); break;
    case Tag::ltoir: entry.ltoir = std::move(value); break;
    case Tag::timings:
      if (value.size() != 4 * sizeof(double)) {
        why = "bad timings field";
        return false;
      }
      entry.binary.timings = {get_int<double>(value, 0), get_int<double>(value, 8), get_int<double>(value, 16),
                              get_int<double>(value, 24)};
      break;
    case Tag::created_unix:
      if (value.size() != sizeof(std::int64_t)) {
        why = "bad timestamp field";
        return false;
      }
      entry.created_unix = get_int<std::int64_t>(value, 0);
      break;
    default: why = "unknown field tag " + std::to_string(static_cast<unsigned>(tag)); return false;
    }
  }
  return true;
}

// The source is the tail of program.txt ("source:\n<source>\n"); it is not stored twice.
std::string source_of(const std::string& program_txt)
{
  const auto at = program_txt.find("\nsource:\n");
  if (at == std::string::npos || program_txt.empty()) {
    return {};
  }
  return program_txt.substr(at + 9, program_txt.size() - at - 10);
}

} // namespace

std::optional<Entry> decode_record(std::string_view bytes, const util::Sha256& key, Sections sections, std::string& why)
{
  if (bytes.size() < k_record_header_size) {
    why = "record shorter than its header (" + std::to_string(bytes.size()) + " bytes)";
    return std::nullopt;
  }
  if (std::memcmp(bytes.data(), k_magic, sizeof k_magic) != 0) {
    why = "bad magic";
    return std::nullopt;
  }
  if (const auto format = get_int<std::uint32_t>(bytes, 8); format != k_record_format) {
    why = "record format " + std::to_string(format) + ", expected " + std::to_string(k_record_format);
    return std::nullopt;
  }
  Entry entry;
  const auto kind = get_int<std::uint32_t>(bytes, 12);
  if (kind != static_cast<std::uint32_t>(EntryKind::binary) && kind != static_cast<std::uint32_t>(EntryKind::failure)) {
    why = "unknown entry kind " + std::to_string(kind);
    return std::nullopt;
  }
  entry.kind = static_cast<EntryKind>(kind);
  const std::uint64_t artifacts_size = get_int<std::uint64_t>(bytes, 16);
  const std::uint64_t inputs_size = get_int<std::uint64_t>(bytes, 40);
  const std::uint64_t payload = bytes.size() - k_record_header_size;
  if (artifacts_size > payload || inputs_size != payload - artifacts_size) {
    why = "sections of " + std::to_string(artifacts_size) + " + " + std::to_string(inputs_size) + " bytes, record holds " +
          std::to_string(payload) + " (truncated record)";
    return std::nullopt;
  }
  const std::string_view artifacts = bytes.substr(k_record_header_size, artifacts_size);
  const std::string_view inputs = bytes.substr(k_record_header_size + artifacts_size);
  const std::pair<std::string_view, std::size_t> checked[] = {{artifacts, 24}, {inputs, 48}};
  for (std::size_t i = 0; i < (sections == Sections::all ? 2u : 1u); ++i) {
    const util::Checksum sum =
      i == 0 ? artifacts_checksum(bytes.substr(8, 8), artifacts) : util::checksum(checked[i].first);
    if (std::memcmp(sum.data(), bytes.data() + checked[i].second, sum.size()) != 0) {
      why = i == 0 ? "checksum mismatch (artifacts)" : "checksum mismatch (inputs)";
      return std::nullopt;
    }
  }
  std::string stored_key;
  if (!parse_fields(artifacts, entry, stored_key, why) ||
      (sections == Sections::all && !parse_fields(inputs, entry, stored_key, why))) {
    return std::nullopt;
  }
  if (stored_key.size() != key.size() || std::memcmp(stored_key.data(), key.data(), key.size()) != 0) {
    why = "the record belongs to another key";
    return std::nullopt;
  }
  entry.source = source_of(entry.program_txt);
  if (entry.kind == EntryKind::binary) {
    try {
      const Arch arch = Arch::parse(entry.binary.arch);
      if (!arch.is_virtual() && !check_cubin(entry.binary.cubin, arch.number(), why)) {
        why = "stored cubin: " + why;
        return std::nullopt;
      }
    } catch (const ArchError&) {
      why = "bad arch field '" + entry.binary.arch + "'";
      return std::nullopt;
    }
  }
  return entry;
}

} // namespace kjit::store
