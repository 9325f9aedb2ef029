// Error reporting for toolchain libraries that are missing or incomplete.
#include "rtc/library_loader.hpp"

#include <dlfcn.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <mutex>
#include <utility>

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

namespace {

// What to do about a library that did not load: where it is missing, name the toolkit settings;
// where it is there but could not be mapped ("failed to map segment", "cannot allocate memory")
// under an address-space limit, name the limit (setting the toolkit root would not help); else
// dlerror's own words say it (a damaged file).
std::string advice(const std::string& path, const std::string& error)
{
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return " (set KJIT_CUDA_HOME or CUDA_HOME to the toolkit root)";
  }
  struct rlimit as {};
  const bool mapping = error.find("map") != std::string::npos || error.find("memory") != std::string::npos;
  if (mapping && ::getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY) {
    return " (the process's address space is limited to " + std::to_string(as.rlim_cur >> 20) +
           " MiB (ulimit -v): raise the limit)";
  }
  return "";
}

} // namespace

namespace {

std::mutex g_unreported_mutex;
double g_unreported_ms = 0;

} // namespace

void add_unreported_load_ms(double ms)
{
  std::lock_guard lock(g_unreported_mutex);
  g_unreported_ms += ms;
}

double take_unreported_load_ms()
{
  std::lock_guard lock(g_unreported_mutex);
  return std::exchange(g_unreported_ms, 0.0);
}

util::DynamicLibrary open_toolchain_library(const std::string& path, const char* what, int flags)
{
  std::string error;
  auto library = util::DynamicLibrary::open(path, flags | RTLD_LOCAL, error);
  if (!library) {
    throw ToolchainError(std::string("cannot load ") + what + " from " + path + ": " + error + advice(path, error), -1);
  }
  return std::move(*library);
}

} // namespace kjit::rtc
