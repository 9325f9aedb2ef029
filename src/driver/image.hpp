// Module images as the driver takes them: telling cubin, fatbin and PTX apart, checking them, and
// the JIT options of cuModuleLoadDataEx.
#pragma once

#include <kjit/module.hpp>

#include <cuda.h>

#include <string>
#include <string_view>
#include <vector>

namespace kjit::driver {

enum class ImageKind { cubin, fatbin, ptx };

const char* kind_name(ImageKind kind) noexcept;

// A checked image, ready for cuModuleLoadDataEx.
struct Image {
  ImageKind kind = ImageKind::cubin;
  std::string arch;  // "sm_90" for a cubin; empty otherwise

  // The bytes to load; for PTX NUL-terminated (data()[size()] == '\0').
  std::string_view data() const noexcept { return m_ptx_copy.empty() ? m_bytes : std::string_view(m_ptx_copy); }

private:
  friend Image classify_image(std::string_view bytes, const std::string& name);
  std::string_view m_bytes;  // the caller's
  std::string m_ptx_copy;    // a NUL-terminated copy when the caller's PTX had none
};

// True when `bytes` starts as a cubin (ELF) or a fatbin does (what classify_image takes as one).
bool is_binary_image(std::string_view bytes) noexcept;

// Classifies and checks `bytes` (which must outlive the Image): an ELF cubin (checked whole), a
// fatbin (its header and size), or PTX text. Throws ImageError naming `name` and what is wrong.
Image classify_image(std::string_view bytes, const std::string& name);

// The option arrays of cuModuleLoadDataEx: an error log buffer always, the JIT settings for images
// the driver compiles (PTX, fatbins).
class JitOptions {
public:
  JitOptions(const LoadOptions& options, ImageKind kind);
  JitOptions(const JitOptions&) = delete;
  JitOptions& operator=(const JitOptions&) = delete;

  unsigned count() const noexcept { return static_cast<unsigned>(m_keys.size()); }
  CUjit_option* keys() noexcept { return m_keys.data(); }
  void** values() noexcept { return m_values.data(); }
  // What the driver wrote to the error log (empty if nothing).
  std::string error_log() const;

private:
  void add(CUjit_option key, void* value);
  std::vector<CUjit_option> m_keys;
  std::vector<void*> m_values;
  char m_error_log[8192] = {};
};

// "maxrregcount=32 lineinfo" for the module cache's key: empty for default settings.
std::string settings_text(const LoadOptions& options);

} // namespace kjit::driver
