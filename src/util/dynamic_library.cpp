// dlopen()/dlsym() wrapper and a /proc/self/maps query.
#include "util/dynamic_library.hpp"

#include <dlfcn.h>
#include <fstream>
#include <tuple>
#include <utility>

namespace kjit::util {

std::optional<DynamicLibrary> DynamicLibrary::open(const std::string& path, int flags, std::string& error)
{
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | flags);
  if (handle == nullptr) {
    const char* message = ::dlerror();
    error = message != nullptr ? message : "dlopen failed";
    return std::nullopt;
  }
  return DynamicLibrary(handle, path);
}

DynamicLibrary::DynamicLibrary(DynamicLibrary&& other) noexcept
  : m_handle(std::exchange(other.m_handle, nullptr)), m_path(std::move(other.m_path))
{
}

DynamicLibrary& DynamicLibrary::operator=(DynamicLibrary&& other) noexcept
{
  if (this != &other) {
    if (m_handle != nullptr) {
      std::ignore = ::dlclose(m_handle);
    }
    m_handle = std::exchange(other.m_handle, nullptr);
    m_path = std::move(other.m_path);
  }
  return *this;
}

DynamicLibrary::~DynamicLibrary()
{
  if (m_handle != nullptr) {
    std::ignore = ::dlclose(m_handle);
  }
}

void* DynamicLibrary::symbol(const char* name) const noexcept
{
  return m_handle != nullptr ? ::dlsym(m_handle, name) : nullptr;
}

bool library_is_loaded(const std::string& fragment)
{
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    const auto slash = line.rfind('/');
    if (slash != std::string::npos && line.find(fragment, slash) != std::string::npos) {
      return true;
    }
  }
  return false;
}

} // namespace kjit::util
