// Toolchain fingerprint: versions remembered under the libraries' file identity.
#include "cache/toolchain.hpp"

#include "cache/toolkit_headers.hpp"
#include "rtc/compiler.hpp"
#include "rtc/nvjitlink_library.hpp"
#include "rtc/nvrtc_library.hpp"
#include "rtc/toolkit.hpp"

#include <map>
#include <mutex>
#include <sys/stat.h>

namespace kjit::cache {

namespace {

std::string file_identity(const std::string& path)
{
  struct stat st {};
  if (path.empty() || ::stat(path.c_str(), &st) != 0) {
    return path + " missing";
  }
  return path + " " + std::to_string(st.st_size) + " " + std::to_string(st.st_mtim.tv_sec) + "." +
         std::to_string(st.st_mtim.tv_nsec) + " " + std::to_string(st.st_ino);
}

struct Versions {
  std::string nvrtc;
  std::string nvjitlink;
  std::string archs;  // "75 80 86 …"
};

std::vector<int> parse_archs(const std::string& text)
{
  std::vector<int> archs;
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t used = 0;
    archs.push_back(std::stoi(text.substr(at), &used));
    at += used;
  }
  return archs;
}

std::mutex g_memo_mutex;
std::map<std::string, Versions> g_memo;  // file identity → versions, for this process

} // namespace

std::string toolchain_file_identity(const rtc::Toolkit& toolkit)
{
  return "nvrtc " + file_identity(toolkit.nvrtc_path) + "\nbuiltins " + file_identity(toolkit.nvrtc_builtins_path) +
         "\nnvjitlink " + file_identity(toolkit.nvjitlink_path) + "\nheaders " +
         file_identity(toolkit.root + "/version.json") + "\n";
}

KeyContext toolchain_context(const Config& config, store::Store* store)
{
  KeyContext context;
  const rtc::Toolkit toolkit = rtc::find_toolkit(config);
  context.toolkit_include_dirs = toolkit.include_dirs;
  context.toolkit_headers = toolkit_headers_fingerprint(toolkit.include_dirs, store);
  const std::string identity = toolchain_file_identity(toolkit);
  const std::string meta_key = "toolchain " + util::to_hex(util::sha256(identity));
  std::lock_guard lock(g_memo_mutex);
  Versions& versions = g_memo[identity];
  if (versions.nvrtc.empty() && store != nullptr) {
    if (auto stored = store->get(store::Table::meta, meta_key)) {
      const auto first = stored->find('\n');
      const auto second = first == std::string::npos ? first : stored->find('\n', first + 1);
      if (second != std::string::npos) {
        versions = {stored->substr(0, first), stored->substr(first + 1, second - first - 1), stored->substr(second + 1)};
      }
    }
  }
  if (versions.nvrtc.empty()) {
    // Probed with this toolkit's libraries only: never record another toolkit's versions here.
    rtc::nvrtc_for(config);
    rtc::nvjitlink_for(config);
    std::string archs;
    for (int arch : kjit::supported_archs()) {
      archs += (archs.empty() ? "" : " ") + std::to_string(arch);
    }
    versions = {rtc::nvrtc_build_identity(), rtc::nvjitlink_identity(), archs};
    if (store != nullptr) {
      store->put({{store::Table::meta, meta_key, versions.nvrtc + "\n" + versions.nvjitlink + "\n" + versions.archs},
                  {store::Table::meta, meta_key + " files", identity}});
    }
  }
  context.nvrtc_identity = versions.nvrtc;
  context.nvjitlink_identity = versions.nvjitlink;
  context.supported_archs = parse_archs(versions.archs);
  return context;
}

} // namespace kjit::cache
