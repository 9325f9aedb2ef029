// Record encoding and strict, bounds-checked decoding.
#include "store/record.hpp"

#include "rtc/elf_view.hpp"
#include "store/compress.hpp"
#include "util/bytes.hpp"

#include "util/hash.hpp"

#include <kjit/arch.hpp>
#include <kjit/cubin.hpp>
#include <kjit/error.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>

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
  header_ref,  // format 4: sha256[32] | u64 size; the content is a blob (blobs.hpp)
  direct_inputs,  // format 6: the raw inputs a direct row leads here by (cache/direct_index.hpp)
  manifest_key,   // format 6: the 32-byte manifest key of the manifest that leads here
};

// A field whose tag has this bit holds its value as one zstd frame (format 4).
constexpr std::uint16_t k_compressed = 0x8000;
// The PTX is stored compressed from this size only (format 5).
constexpr std::size_t k_hit_compress_min = 16 * 1024;

// The fields stored compressed when that makes them smaller: text that is not read by a hit, or
// is read rarely and large. The cubin is not (docs/benchmarks.md: it is what a hit loads).
bool compressible(Tag tag)
{
  switch (tag) {
  case Tag::program_txt:
  case Tag::options_txt:
  case Tag::header_content:
  case Tag::ptx:
  case Tag::log:
  case Tag::ltoir: return true;
  default: return false;
  }
}

using util::get_int;
using util::put_int;

void put_field(std::string& out, Tag tag, std::string_view value)
{
  std::uint16_t code = static_cast<std::uint16_t>(tag);
  std::optional<std::string> packed;
  // Every hit expands the PTX: below k_hit_compress_min zstd's per-frame setup costs a hit more
  // (≈ 33 000 instructions for a 1 KiB PTX, half of a disk hit) than its bytes are worth (format 5).
  const bool small_hit_field = tag == Tag::ptx && value.size() < k_hit_compress_min;
  if (compressible(tag) && !small_hit_field && (packed = compress(value))) {
    code |= k_compressed;
    value = *packed;
  }
  if (value.size() > UINT32_MAX) {
    throw StoreError("a field of " + std::to_string(value.size()) + " bytes does not fit a record", EFBIG);
  }
  put_int(out, code);
  put_int(out, static_cast<std::uint32_t>(value.size()));
  out.append(value);
}

std::string header_ref_value(const util::Sha256& hash, std::uint64_t size)
{
  std::string out(reinterpret_cast<const char*>(hash.data()), hash.size());
  put_int(out, size);
  return out;
}

// Calls `field(code, value)` for each field of `section` as stored (no checksum verified, nothing
// expanded) until it returns false; false if a field runs past the end (a few bytes too few for
// a field header at the end are ignored).
template <typename Field>
bool for_each_stored_field(std::string_view section, Field&& field)
{
  for (std::size_t at = 0; section.size() - at >= 6;) {
    const auto code = get_int<std::uint16_t>(section, at);
    const auto length = get_int<std::uint32_t>(section, at + 2);
    at += 6;
    if (section.size() - at < length) {
      return false;
    }
    if (!field(code, section.substr(at, length))) {
      return true;
    }
    at += length;
  }
  return true;
}

// Calls `field(tag, value, owned)` for each field of a section whose checksum was verified,
// expanding compressed values (`owned` then holds the expansion and may be moved from); false with `why` on a malformed field or when `field` returns false.
template <typename Field>
bool for_each_field(std::string_view section, std::string& why, Field&& field)
{
  // What the compressed fields claim together, before any is expanded: each is bounded by
  // frame_size(), but a forged record (a bundle's, a remote's) of a few KiB can hold many frames of
  // zeros, each claiming the most (docs/cache-format.md, "Record grammar").
  std::size_t claimed = 0;  // at most k_expand_max
  bool too_much = false;
  for_each_stored_field(section, [&](std::uint16_t code, std::string_view value) {
    if (const auto size = (code & k_compressed) != 0 ? frame_size(value) : std::nullopt) {
      too_much = *size > k_expand_max - claimed;
      claimed += too_much ? 0 : *size;
    }
    return !too_much;
  });
  if (too_much) {
    why = "compressed fields: they expand to more than " + std::to_string(k_expand_max) + " bytes in all";
    return false;
  }
  std::size_t at = 0;
  std::string expanded;
  while (at < section.size()) {
    if (section.size() - at < 6) {
      why = "field header cut short";
      return false;
    }
    const auto code = get_int<std::uint16_t>(section, at);
    const auto length = get_int<std::uint32_t>(section, at + 2);
    at += 6;
    if (section.size() - at < length) {
      why = "field runs past the end";
      return false;
    }
    std::string_view value = section.substr(at, length);
    at += length;
    const auto tag = static_cast<Tag>(code & ~k_compressed);
    if ((code & k_compressed) != 0) {
      if (!compressible(tag)) {
        why = "unknown field tag " + std::to_string(code);
        return false;
      }
      const auto size = frame_size(value);
      if (!size || !decompress(value, *size, expanded, why)) {
        why = "field " + std::to_string(code & ~k_compressed) + ": " + (size ? why : "bad zstd frame header");
        return false;
      }
      value = expanded;
    }
    if (!field(tag, value, value.data() == expanded.data() ? &expanded : nullptr)) {
      return false;
    }
  }
  return true;
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
  return util::checksum(format_and_kind, artifacts);
}

} // namespace

std::string encode_record(const Entry& entry, const util::Sha256& key, HeaderStorage storage)
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
  inputs.reserve(entry.direct_inputs.size() + entry.program_txt.size() + entry.options_txt.size() + 256);
  // First in the section, so a direct hit finds them right after the artifacts (format 6).
  if (!entry.direct_inputs.empty()) {
    put_field(inputs, Tag::direct_inputs, entry.direct_inputs);
  }
  if (!entry.manifest_key.empty()) {
    put_field(inputs, Tag::manifest_key, entry.manifest_key);
  }
  put_field(inputs, Tag::program_txt, entry.program_txt);
  put_field(inputs, Tag::options_txt, entry.options_txt);
  const HeaderHashes hashes(entry);
  for (const auto& [name, content] : entry.headers) {
    put_field(inputs, Tag::header_name, name);
    if (storage == HeaderStorage::inline_content) {
      put_field(inputs, Tag::header_content, content);
    } else {
      put_field(inputs, Tag::header_ref, header_ref_value(hashes.of(name, content), content.size()));
    }
  }
  for (const HeaderRef& ref : entry.header_refs) {
    if (entry.headers.count(ref.name) == 0) {  // known by reference only (a decoded record)
      if (storage == HeaderStorage::inline_content) {
        throw StoreError("cannot store " + entry.program_name + " inline: the content of its header " + ref.name +
                         " was not loaded", EINVAL);
      }
      put_field(inputs, Tag::header_name, ref.name);
      put_field(inputs, Tag::header_ref, header_ref_value(ref.hash, ref.size));
    }
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
bool parse_fields(std::string_view section, Entry& entry, std::string_view& key, std::string& why)
{
  std::string pending_header;
  std::string pending_expression;
  return for_each_field(section, why, [&](Tag tag, std::string_view view, std::string* owned) {
    // The value as a string (the expansion moved, or one copy of the view); fixed-size fields
    // are read from the view (no allocation on a hit).
    const auto value = [&] { return owned != nullptr ? std::move(*owned) : std::string(view); };
    switch (tag) {
    case Tag::key: key = view; break;
    case Tag::program_name: entry.program_name = value(); break;
    case Tag::program_txt: entry.program_txt = value(); break;
    case Tag::options_txt: entry.options_txt = value(); break;
    case Tag::direct_inputs: entry.direct_inputs = value(); break;
    case Tag::manifest_key:
      if (view.size() != 32) {
        why = "bad manifest key field";
        return false;
      }
      entry.manifest_key = view;
      break;
    case Tag::source: entry.source = value(); break;
    case Tag::header_name: pending_header = value(); break;
    case Tag::header_content:
      entry.header_refs.push_back({pending_header, util::sha256(view), view.size()});
      entry.headers[pending_header] = value();
      break;
    case Tag::header_ref:
      if (view.size() != 40) {
        why = "bad header reference field";
        return false;
      }
      entry.header_refs.push_back({pending_header, util::digest_of_bytes(view.substr(0, 32)), get_int<std::uint64_t>(view, 32)});
      break;
    case Tag::option: entry.options.push_back(value()); break;
    case Tag::arch: entry.binary.arch = value(); break;
    case Tag::ptx: entry.binary.ptx = value(); break;
    case Tag::cubin: entry.binary.cubin = value(); break;
    case Tag::cubin_path: entry.binary.cubin_path = value(); break;
    case Tag::lowered_expression: pending_expression = value(); break;
    case Tag::lowered_name: entry.binary.lowered_names.emplace_back(pending_expression, value()); break;
    case Tag::log: entry.binary.log = value(); break;
    case Tag::ltoir: entry.ltoir = value(); break;
    case Tag::timings:
      if (view.size() != 4 * sizeof(double)) {
        why = "bad timings field";
        return false;
      }
      entry.binary.timings = {get_int<double>(view, 0), get_int<double>(view, 8), get_int<double>(view, 16),
                              get_int<double>(view, 24)};
      break;
    case Tag::created_unix:
      if (view.size() != sizeof(std::int64_t)) {
        why = "bad timestamp field";
        return false;
      }
      entry.created_unix = get_int<std::int64_t>(view, 0);
      break;
    default: why = "unknown field tag " + std::to_string(static_cast<unsigned>(tag)); return false;
    }
    return true;
  });
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

namespace {

struct Split {
  EntryKind kind;
  std::string_view artifacts;
  std::string_view inputs;
};

// How decode_record's `why` begins for a record of another format (of_another_format()).
constexpr std::string_view k_other_format_why = "record format ";

// The header checked (magic, format, kind, sizes) and the sections' checksums verified (the
// inputs only with Sections::all); nullopt with `why` otherwise.
std::optional<Split> split_record(std::string_view bytes, Sections sections, std::string& why, bool verify = true)
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
    why = std::string(k_other_format_why) + std::to_string(format) + ", expected " + std::to_string(k_record_format);
    return std::nullopt;
  }
  const auto kind = get_int<std::uint32_t>(bytes, 12);
  if (kind != static_cast<std::uint32_t>(EntryKind::binary) && kind != static_cast<std::uint32_t>(EntryKind::failure)) {
    why = "unknown entry kind " + std::to_string(kind);
    return std::nullopt;
  }
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
  if (verify && sections != Sections::inputs) {
    const util::Checksum sum = artifacts_checksum(bytes.substr(8, 8), artifacts);
    if (std::memcmp(sum.data(), bytes.data() + 24, sum.size()) != 0) {
      why = "checksum mismatch (artifacts)";
      return std::nullopt;
    }
  }
  if (verify && sections != Sections::artifacts) {
    const util::Checksum sum = util::checksum(inputs);
    if (std::memcmp(sum.data(), bytes.data() + 48, sum.size()) != 0) {
      why = "checksum mismatch (inputs)";
      return std::nullopt;
    }
  }
  return Split{static_cast<EntryKind>(kind), artifacts, inputs};
}

} // namespace

std::optional<RecordSummary> summarize_record(std::string_view bytes)
{
  std::string why;
  const auto split = split_record(bytes, Sections::artifacts, why, false);
  if (!split) {
    return std::nullopt;
  }
  RecordSummary summary{split->kind, {}, {}, 0};
  const bool framed = for_each_stored_field(split->artifacts, [&](std::uint16_t code, std::string_view value) {
    switch (static_cast<Tag>(code)) {
    case Tag::program_name: summary.program_name = value; break;
    case Tag::arch: summary.arch = value; break;
    case Tag::created_unix:
      if (value.size() == sizeof(std::int64_t)) {
        summary.created_unix = get_int<std::int64_t>(value, 0);
      }
      break;
    default: break;
    }
    return true;
  });
  if (!framed) {
    return std::nullopt;
  }
  return summary;
}

std::optional<std::string_view> input_field(std::string_view bytes, InputField field)
{
  std::string why;
  const auto split = split_record(bytes, Sections::inputs, why, false);
  if (!split) {
    return std::nullopt;
  }
  const Tag tag = field == InputField::direct_inputs ? Tag::direct_inputs : Tag::manifest_key;
  const auto wanted = static_cast<std::uint16_t>(tag);
  std::optional<std::string_view> found;
  for_each_stored_field(split->inputs, [&](std::uint16_t code, std::string_view value) {
    if (code == wanted) {
      found = value;
      return false;
    }
    // Past the fields that come first: not there.
    return code == static_cast<std::uint16_t>(Tag::direct_inputs) ||
           code == static_cast<std::uint16_t>(Tag::manifest_key);
  });
  return found;
}

std::optional<std::vector<util::Sha256>> header_blobs(std::string_view bytes, std::string& why)
{
  const auto split = split_record(bytes, Sections::inputs, why);
  if (!split) {
    return std::nullopt;
  }
  std::vector<util::Sha256> hashes;
  const bool ok = for_each_field(split->inputs, why, [&](Tag tag, std::string_view value, std::string*) {
    if (tag == Tag::header_ref) {
      if (value.size() != 40) {
        why = "bad header reference field";
        return false;
      }
      hashes.push_back(util::digest_of_bytes(value.substr(0, 32)));
    }
    return true;
  });
  if (!ok) {
    return std::nullopt;
  }
  std::sort(hashes.begin(), hashes.end());  // each once: two headers of one content are one use
  hashes.erase(std::unique(hashes.begin(), hashes.end()), hashes.end());
  return hashes;
}

std::optional<Entry> decode_record(std::string_view bytes, const util::Sha256& key, Sections sections, std::string& why,
                                   CubinCheck cubin)
{
  sections = sections == Sections::inputs ? Sections::all : sections;
  const auto split = split_record(bytes, sections, why);
  if (!split) {
    return std::nullopt;
  }
  Entry entry;
  entry.kind = split->kind;
  const std::string_view artifacts = split->artifacts;
  const std::string_view inputs = split->inputs;
  std::string_view stored_key;  // a view into `bytes`
  if (!parse_fields(artifacts, entry, stored_key, why) ||
      (sections == Sections::all && !parse_fields(inputs, entry, stored_key, why))) {
    return std::nullopt;
  }
  if (stored_key.size() != key.size() || std::memcmp(stored_key.data(), key.data(), key.size()) != 0) {
    why = "the record belongs to another key";
    return std::nullopt;
  }
  entry.source = source_of(entry.program_txt);
  std::sort(entry.header_refs.begin(), entry.header_refs.end(),
            [](const HeaderRef& a, const HeaderRef& b) { return a.name < b.name; });
  if (entry.kind == EntryKind::binary) {
    try {
      const Arch arch = Arch::parse(entry.binary.arch);
      const bool sound = arch.is_virtual() ||
                         (cubin == CubinCheck::full ? check_cubin(entry.binary.cubin, arch.number(), why)
                                                    : rtc::check_cubin_header(entry.binary.cubin, arch.number(), why));
      if (!sound) {
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

bool of_another_format(std::string_view why)
{
  return why.substr(0, k_other_format_why.size()) == k_other_format_why;
}

} // namespace kjit::store
