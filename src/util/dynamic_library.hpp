// A dlopen()ed shared library and typed symbol lookup; used for NVRTC, nvJitLink and the driver.
#pragma once

#include <optional>
#include <string>

namespace kjit::util {

// Move-only owner of a dlopen handle. The library stays loaded for the owner's lifetime.
class DynamicLibrary {
public:
  // Opens `path` (a file path or a soname) with RTLD_NOW | flags. Returns nullopt and sets
  // `error` to dlerror()'s text when the library can't be opened.
  static std::optional<DynamicLibrary> open(const std::string& path, int flags, std::string& error);

  DynamicLibrary(DynamicLibrary&& other) noexcept;
  DynamicLibrary& operator=(DynamicLibrary&& other) noexcept;
  DynamicLibrary(const DynamicLibrary&) = delete;
  DynamicLibrary& operator=(const DynamicLibrary&) = delete;
  ~DynamicLibrary();

  // The symbol's address or nullptr.
  void* symbol(const char* name) const noexcept;

  template <typename Fn>
  bool bind(Fn*& out, const char* name) const noexcept
  {
    out = reinterpret_cast<Fn*>(symbol(name));
    return out != nullptr;
  }

  const std::string& path() const noexcept { return m_path; }

private:
  DynamicLibrary(void* handle, std::string path) noexcept : m_handle(handle), m_path(std::move(path)) {}
  void* m_handle = nullptr;
  std::string m_path;
};

// True if a library whose file name contains `fragment` is mapped in this process.
bool library_is_loaded(const std::string& fragment);

} // namespace kjit::util
