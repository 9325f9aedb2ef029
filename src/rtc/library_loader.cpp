// Error reporting for toolchain libraries that are missing or incomplete.
#include "rtc/library_loader.hpp"

#include <dlfcn.h>

namespace kjit::rtc {

void SymbolBinder::check(const char* what) const
{
  if (m_missing.empty()) {
    return;
  }
  std::string names;
  for (const auto& name : m_missing) {
    names += (names.empty() ? "" : ", ") + name;
  }
  throw ToolchainError(std::string(what) + " at " + m_library.path() + " lacks " + names +
                         " (is it the CUDA version kjit was built for?)",
                       -1);
}

util::DynamicLibrary open_toolchain_library(const std::string& path, const char* what, int flags)
{
  std::string error;
  auto library = util::DynamicLibrary::open(path, flags | RTLD_LOCAL, error);
  if (!library) {
    throw ToolchainError(std::string("cannot load ") + what + " from " + path + ": " + error +
                           " (set KJIT_CUDA_HOME or CUDA_HOME to the toolkit root)",
                         -1);
  }
  return std::move(*library);
}

} // namespace kjit::rtc
