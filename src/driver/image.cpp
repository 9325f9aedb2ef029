// Module images: cubin, fatbin or PTX by content, checked before the driver sees them; JIT options.
#include "driver/image.hpp"

#include "util/bytes.hpp"

#include <kjit/cubin.hpp>
#include <kjit/error.hpp>

#include <cstdint>
#include <cstring>

namespace kjit::driver {

namespace {

// fatBinaryHeader of fatbinary's output (and of every fatbin the CUDA toolchain writes): magic,
// version, header size, then the size of the entries that follow.
constexpr std::uint32_t k_fatbin_magic = 0xBA55ED50;
constexpr std::size_t k_fatbin_header_bytes = 16;

void check_fatbin(std::string_view bytes, const std::string& name)
{
  if (bytes.size() < k_fatbin_header_bytes) {
    throw ImageError(name + ": a truncated fatbin (" + std::to_string(bytes.size()) + " bytes)", name);
  }
  const auto header_size = util::get_int<std::uint16_t>(bytes, 6);
  const auto fat_size = util::get_int<std::uint64_t>(bytes, 8);
  if (header_size < k_fatbin_header_bytes || header_size > bytes.size() || fat_size > bytes.size() - header_size) {
    throw ImageError(name + ": a truncated or malformed fatbin (its header says " + std::to_string(header_size) +
                       " + " + std::to_string(fat_size) + " bytes; the image has " + std::to_string(bytes.size()) + ")",
                     name);
  }
}

bool looks_like_ptx(std::string_view text)
{
  if (text.find('\0') != std::string_view::npos) {
    return false;  // binary data (a NUL only ends the text: stripped before)
  }
  return text.find(".version") != std::string_view::npos && text.find(".target") != std::string_view::npos;
}

} // namespace

const char* kind_name(ImageKind kind) noexcept
{
  switch (kind) {
  case ImageKind::cubin: return "cubin";
  case ImageKind::fatbin: return "fatbin";
  case ImageKind::ptx: return "ptx";
  }
  return "?";
}

bool is_binary_image(std::string_view bytes) noexcept
{
  return bytes.size() >= 4 &&
         (bytes.substr(0, 4) == "\x7f" "ELF" || util::get_int<std::uint32_t>(bytes, 0) == k_fatbin_magic);
}

Image classify_image(std::string_view bytes, const std::string& name)
{
  Image image;
  image.m_bytes = bytes;
  if (bytes.size() >= 4 && bytes.substr(0, 4) == "\x7f" "ELF") {
    CubinInfo info;
    std::string why;
    if (!inspect_cubin(bytes, info, why)) {
      throw ImageError(name + ": not a loadable cubin: " + why, name);
    }
    image.kind = ImageKind::cubin;
    image.arch = "sm_" + std::to_string(info.sm);
    return image;
  }
  if (bytes.size() >= 4 && util::get_int<std::uint32_t>(bytes, 0) == k_fatbin_magic) {
    check_fatbin(bytes, name);
    image.kind = ImageKind::fatbin;
    return image;
  }
  std::string_view text = bytes;
  while (!text.empty() && text.back() == '\0') {
    text.remove_suffix(1);
  }
  if (!looks_like_ptx(text)) {
    throw ImageError(name + ": neither a cubin (ELF), a fatbin nor PTX text (" + std::to_string(bytes.size()) +
                       " bytes)",
                     name);
  }
  image.kind = ImageKind::ptx;
  if (text.size() == bytes.size()) {  // no terminating NUL: the driver reads a C string
    image.m_ptx_copy.assign(text);
  } else {
    image.m_bytes = bytes.substr(0, text.size());
  }
  return image;
}

JitOptions::JitOptions(const LoadOptions& options, ImageKind kind)
{
  add(CU_JIT_ERROR_LOG_BUFFER, m_error_log);
  add(CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, reinterpret_cast<void*>(std::uintptr_t{sizeof m_error_log - 1}));
  if (kind == ImageKind::cubin) {
    return;  // nothing to compile: the settings would be ignored
  }
  if (options.max_registers > 0) {
    add(CU_JIT_MAX_REGISTERS, reinterpret_cast<void*>(static_cast<std::uintptr_t>(options.max_registers)));
  }
  if (options.line_info) {
    add(CU_JIT_GENERATE_LINE_INFO, reinterpret_cast<void*>(std::uintptr_t{1}));
  }
  if (options.debug) {
    add(CU_JIT_GENERATE_DEBUG_INFO, reinterpret_cast<void*>(std::uintptr_t{1}));
  }
}

void JitOptions::add(CUjit_option key, void* value)
{
  m_keys.push_back(key);
  m_values.push_back(value);
}

std::string JitOptions::error_log() const
{
  return std::string(m_error_log, ::strnlen(m_error_log, sizeof m_error_log));
}

std::string settings_text(const LoadOptions& options)
{
  std::string text;
  if (options.max_registers > 0) {
    text += " maxrregcount=" + std::to_string(options.max_registers);
  }
  if (options.line_info) {
    text += " lineinfo";
  }
  if (options.debug) {
    text += " debug";
  }
  return text;
}

} // namespace kjit::driver
