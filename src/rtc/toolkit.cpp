// Toolkit discovery with stat() and readdir() only, so it is cheap enough for warm starts.
#include "rtc/toolkit.hpp"

#include "kjit_build_config.hpp"

#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>
#include <dirent.h>
#include <sys/stat.h>

namespace kjit::rtc {

namespace {

bool exists(const std::string& path, FileSeen* seen = nullptr)
{
  if (seen == nullptr) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0;
  }
  *seen = stat_file(path);
  return seen->state == FileSeen::State::present;
}

} // namespace

FileSeen stat_file(const std::string& path)
{
  FileSeen seen;
  struct stat st {};
  seen.state = !path.empty() && ::stat(path.c_str(), &st) == 0 ? FileSeen::State::present : FileSeen::State::missing;
  if (seen.state == FileSeen::State::present) {
    seen.size = st.st_size;
    seen.mtime_sec = st.st_mtim.tv_sec;
    seen.mtime_nsec = st.st_mtim.tv_nsec;
    seen.inode = st.st_ino;
  }
  return seen;
}

namespace {

std::string pick_root(const Config& config)
{
  if (!config.cuda_home.empty()) {
    return config.cuda_home;
  }
  for (const char* variable : {"CUDA_HOME", "CUDA_PATH"}) {
    if (const char* value = std::getenv(variable); value != nullptr && *value != '\0') {
      return value;
    }
  }
  return KJIT_BUILD_CUDA_HOME;
}

// libnvrtc opens libnvrtc-builtins.so.<major>.<minor> by name; find the file next to it: the
// build's version first (one stat), else whichever the folder holds (a readdir).
std::string find_builtins(const std::string& library_dir, FileSeen& seen)
{
  const std::string prefix = "libnvrtc-builtins.so.";
  const std::string expected =
    library_dir + "/" + prefix + std::to_string(KJIT_CUDA_MAJOR) + "." + std::to_string(KJIT_CUDA_MINOR);
  if (exists(expected, &seen)) {
    return expected;
  }
  seen = {};  // the file found below (if any) was not stat()ed
  DIR* dir = ::opendir(library_dir.c_str());
  if (dir == nullptr) {
    return {};
  }
  std::string found;
  while (const dirent* entry = ::readdir(dir)) {
    const std::string name = entry->d_name;
    if (name.compare(0, prefix.size(), prefix) == 0 && name.find('.', prefix.size()) != std::string::npos &&
        name.find_first_not_of("0123456789.", prefix.size()) == std::string::npos) {
      found = library_dir + "/" + name;
    }
  }
  ::closedir(dir);
  return found;
}

std::atomic<std::uint64_t> g_finds{0};
std::mutex g_remembered_mutex;
std::map<std::string, Toolkit> g_remembered;  // root → what remember_toolkit() found there last

} // namespace

Toolkit find_toolkit(const Config& config)
{
  g_finds.fetch_add(1, std::memory_order_relaxed);
  Toolkit toolkit;
  toolkit.root = pick_root(config);
  for (const char* sub : {"/include", "/include/cccl"}) {
    if (exists(toolkit.root + sub)) {
      toolkit.include_dirs.push_back(toolkit.root + sub);
    }
  }
  const std::string nvrtc_name = "libnvrtc.so." + std::to_string(KJIT_CUDA_MAJOR);
  toolkit.library_dir = toolkit.root + "/lib64";
  FileSeen first;  // the first candidate's stat: what a missing library's path is (lib64)
  for (const char* sub : {"/lib64", "/lib", "/targets/x86_64-linux/lib", "/targets/sbsa-linux/lib"}) {
    FileSeen seen;
    const bool found = exists(toolkit.root + sub + "/" + nvrtc_name, &seen);
    if (first.state == FileSeen::State::not_seen) {
      first = seen;
    }
    if (found) {
      toolkit.library_dir = toolkit.root + sub;
      toolkit.nvrtc_seen = seen;
      break;
    }
  }
  if (toolkit.nvrtc_seen.state == FileSeen::State::not_seen) {
    toolkit.nvrtc_seen = first;  // missing at <root>/lib64, the path used below
  }
  toolkit.nvrtc_path = toolkit.library_dir + "/" + nvrtc_name;
  toolkit.nvjitlink_path = toolkit.library_dir + "/libnvJitLink.so." + std::to_string(KJIT_CUDA_MAJOR);
  toolkit.nvrtc_builtins_path = find_builtins(toolkit.library_dir, toolkit.nvrtc_builtins_seen);
  return toolkit;
}

Toolkit remember_toolkit(const Config& config)
{
  Toolkit toolkit = find_toolkit(config);
  std::lock_guard lock(g_remembered_mutex);
  g_remembered[toolkit.root] = toolkit;
  return toolkit;
}

Toolkit toolkit_for(const Config& config)
{
  {
    std::lock_guard lock(g_remembered_mutex);
    if (const auto it = g_remembered.find(pick_root(config)); it != g_remembered.end()) {
      return it->second;
    }
  }
  return find_toolkit(config);
}

std::uint64_t toolkit_finds() noexcept
{
  return g_finds.load(std::memory_order_relaxed);
}

} // namespace kjit::rtc
