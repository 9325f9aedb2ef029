// Lazy, once-per-process loading of libnvJitLink. Its entry points carry the ABI version in
// their names (__nvJitLinkCreate_13_0); nvJitLink.h's inline wrappers call those.
#include "rtc/nvjitlink_library.hpp"

#include "rtc/library_loader.hpp"
#include "rtc/toolkit.hpp"

#include <kjit/error.hpp>

#include <memory>

namespace kjit::rtc {

namespace {

struct Loaded {
  std::string path;
  util::DynamicLibrary library;
  NvJitLinkApi api{};
};

LoadOnce<Loaded> g_loaded;

std::unique_ptr<Loaded> load(const Toolkit& toolkit)
{
  auto loaded = std::unique_ptr<Loaded>(new Loaded{toolkit.nvjitlink_path, open_toolchain_library(toolkit.nvjitlink_path, "nvJitLink"), {}});
  NvJitLinkApi& api = loaded->api;
  SymbolBinder(loaded->library)(api.create, "__nvJitLinkCreate_13_0")(api.destroy, "__nvJitLinkDestroy_13_0")(
    api.add_data, "__nvJitLinkAddData_13_0")(api.complete, "__nvJitLinkComplete_13_0")(
    api.get_linked_cubin_size, "__nvJitLinkGetLinkedCubinSize_13_0")(api.get_linked_cubin, "__nvJitLinkGetLinkedCubin_13_0")(
    api.get_error_log_size, "__nvJitLinkGetErrorLogSize_13_0")(api.get_error_log, "__nvJitLinkGetErrorLog_13_0")(
    api.get_info_log_size, "__nvJitLinkGetInfoLogSize_13_0")(api.get_info_log, "__nvJitLinkGetInfoLog_13_0")(
    api.version, "nvJitLinkVersion")
    .check("nvJitLink");
  return loaded;
}

} // namespace

const NvJitLinkApi& nvjitlink()
{
  return g_loaded.get([] { return load(find_toolkit(current_config())); }).api;
}

const NvJitLinkApi& nvjitlink_for(const Config& config)
{
  const Toolkit toolkit = toolkit_for(config);
  const Loaded& loaded = g_loaded.get([&] { return load(toolkit); });
  if (loaded.path != toolkit.nvjitlink_path) {
    throw ToolchainError("this process already uses nvJitLink from " + loaded.path + "; a Cache for the toolkit at " +
                           toolkit.root + " (" + toolkit.nvjitlink_path + ") cannot use another nvJitLink in the same process",
                         -1);
  }
  return loaded.api;
}

bool nvjitlink_is_loaded() noexcept
{
  return g_loaded.loaded();
}

NvJitLinkVersion nvjitlink_version(const Config& config)
{
  NvJitLinkVersion version;
  unsigned& major = version.major;
  unsigned& minor = version.minor;
  if (g_loaded.loaded()) {
    nvjitlink_for(config).version(&major, &minor);
  } else {
    // Bound whole, as the load for good binds it (a library that lacks part of the API is refused
    // here too, with the same words), on a handle of its own that is closed on return: a load of
    // the library meanwhile keeps it mapped.
    const std::unique_ptr<Loaded> loaded = load(toolkit_for(config));
    loaded->api.version(&major, &minor);
  }
  return version;
}

} // namespace kjit::rtc
