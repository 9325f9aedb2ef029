// Direct keys: the raw inputs of a program as one byte string, its store row, and this process's index.
#include "cache/direct_index.hpp"

#include "store/record.hpp"
#include "util/bytes.hpp"

#include <cstring>

namespace kjit::cache {

namespace {

constexpr std::string_view k_inputs_magic = "kjit-direct 1\n";

void put_field(std::string& out, std::string_view value)
{
  const auto size = static_cast<std::uint64_t>(value.size());
  char bytes[sizeof size];
  std::memcpy(bytes, &size, sizeof size);
  out.append(bytes, sizeof bytes);
  out.append(value);
}

void put_list(std::string& out, const std::vector<std::string>& values)
{
  put_field(out, std::to_string(values.size()));
  for (const std::string& value : values) {
    put_field(out, value);
  }
}

bool starts_with(const std::string& text, std::string_view prefix)
{
  return text.compare(0, prefix.size(), prefix) == 0;
}

// The length of the line splice at `at` of `text` (a backslash, or its trigraph ??/, then a
// newline, \r\n too), or 0 for none.
std::size_t splice_at(std::string_view text, std::size_t at)
{
  std::size_t next = at;
  if (text[at] == '\\') {
    next = at + 1;
  } else if (text.compare(at, 3, "?\?/") == 0) {
    next = at + 3;
  } else {
    return 0;
  }
  if (next < text.size() && text[next] == '\r') {
    ++next;
  }
  return next < text.size() && text[next] == '\n' ? next + 1 - at : 0;
}

// Whether `text` names "include" (#include, #include_next, __has_include, -include…), also split
// by line splices (`#inc\<newline>lude <x.h>` is an include to NVRTC).
bool mentions_include(std::string_view text)
{
  if (text.find("include") != std::string_view::npos) {
    return true;
  }
  if (text.find('\\') == std::string_view::npos && text.find("?\?/") == std::string_view::npos) {
    return false;
  }
  std::string joined;
  joined.reserve(text.size());
  for (std::size_t at = 0; at < text.size();) {
    if (const std::size_t splice = splice_at(text, at); splice != 0) {
      at += splice;
    } else {
      joined += text[at++];
    }
  }
  return joined.find("include") != std::string::npos;
}

} // namespace

bool direct_options(const Program& program)
{
  for (const std::string& option : program.options) {
    // -I, --include-path, -include, --pre-include, and a -D value that probes a header
    // (-DHAS=__has_include(<x.h>) in an #if): NVRTC reads or stats disk files for them. PCH
    // options read a file or folder of their own.
    if (starts_with(option, "-I") || mentions_include(option) || option.find("pch") != std::string::npos) {
      return false;
    }
  }
  return true;
}

bool mentions_include(const Program& program)
{
  return deps::any_program_text(program, [](const std::string& text) { return mentions_include(text); });
}

bool direct_eligible(const Program& program)
{
  return direct_options(program) && !mentions_include(program);
}

std::string inputs_toolchain(const KeyContext& context)
{
  std::string out;
  put_list(out, context.toolkit_include_names);
  // Not the toolkit headers' fingerprint: a direct-eligible program reads no toolkit header, and
  // its key leaves the fingerprint out too (make_key_texts).
  put_field(out, context.nvrtc_identity);
  put_field(out, context.nvjitlink_identity);
  put_field(out, std::to_string(store::k_record_format));
  if (!context.compiler_environment.empty()) {
    // Only when set: the inputs of everyone else (and the direct rows stored for them) stay as they
    // were. The context is one length-prefixed field of the inputs, so a field more is unambiguous.
    put_field(out, context.compiler_environment);
  }
  return out;
}

std::string direct_inputs(const Program& program, const Arch& arch, std::string_view context_text)
{
  std::size_t size = k_inputs_magic.size() + context_text.size() + program.name.size() + program.source.size() + 128;
  for (const auto& [name, content] : program.headers) {
    size += name.size() + content.size() + 16;
  }
  std::string out;
  out.reserve(size);
  out += k_inputs_magic;
  put_field(out, context_text);
  put_field(out, arch.str());
  put_field(out, program.name);
  put_field(out, program.source);
  put_field(out, std::to_string(program.headers.size()));
  for (const auto& [name, content] : program.headers) {
    put_field(out, name);
    put_field(out, content);
  }
  put_list(out, program.options);
  put_list(out, program.name_expressions);
  return out;
}

std::string direct_row(const util::Sha256& entry_key, std::size_t inputs_size)
{
  std::string row(reinterpret_cast<const char*>(entry_key.data()), entry_key.size());
  util::put_int(row, static_cast<std::uint64_t>(inputs_size));
  return row;
}

std::optional<util::Sha256> direct_row_entry_key(std::string_view row, std::size_t inputs_size)
{
  util::Sha256 key;
  if (row.size() != k_direct_row_size || util::get_int<std::uint64_t>(row, key.size()) != inputs_size) {
    return std::nullopt;
  }
  std::memcpy(key.data(), row.data(), key.size());
  return key;
}

std::optional<util::Sha256> DirectIndex::find(const util::Checksum& input_digest, std::string_view inputs) const
{
  std::lock_guard lock(m_mutex);
  const auto it = m_known.find(input_digest);
  if (it == m_known.end() || it->second.inputs != inputs) {
    return std::nullopt;
  }
  return it->second.entry_key;
}

void DirectIndex::insert(const util::Checksum& input_digest, std::string inputs, const util::Sha256& entry_key)
{
  std::lock_guard lock(m_mutex);
  if (m_bytes + inputs.size() > k_limit_bytes) {
    m_known.clear();
    m_bytes = 0;
  }
  const std::size_t size = inputs.size();
  const auto [it, added] = m_known.insert_or_assign(input_digest, Known{std::move(inputs), entry_key});
  m_bytes += added ? size : 0;
}

void DirectIndex::clear()
{
  std::lock_guard lock(m_mutex);
  m_known.clear();
  m_bytes = 0;
}

} // namespace kjit::cache
