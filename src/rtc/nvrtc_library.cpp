// Lazy, once-per-process loading of libnvrtc (and its builtins library).
#include "rtc/nvrtc_library.hpp"

#include "config/config_internal.hpp"
#include "config/log.hpp"
#include "rtc/library_loader.hpp"
#include "rtc/toolkit.hpp"

#include <dlfcn.h>
#include <memory>

namespace kjit::rtc {

namespace {

struct Loaded {
  std::string path;
  std::string environment;  // compiler_environment_now() when NVRTC was loaded: what it compiles with
  std::optional<util::DynamicLibrary> builtins;
  util::DynamicLibrary library;
  NvrtcApi api{};
};

LoadOnce<Loaded> g_loaded;

std::unique_ptr<Loaded> load(const Toolkit& toolkit)
{
  std::optional<util::DynamicLibrary> builtins;
  if (!toolkit.nvrtc_builtins_path.empty()) {
    // libnvrtc dlopen()s its builtins by soname; loading them first by absolute path (global)
    // lets that succeed even when the run path of the embedding program misses the CUDA folder.
    std::string error;
    builtins = util::DynamicLibrary::open(toolkit.nvrtc_builtins_path, RTLD_GLOBAL, error);
    if (!builtins) {
      log::line("warning: cannot preload " + toolkit.nvrtc_builtins_path + ": " + error);
    }
  }
  std::string environment = compiler_environment_now();
  auto loaded = std::unique_ptr<Loaded>(new Loaded{toolkit.nvrtc_path, std::move(environment), std::move(builtins),
                                                   open_toolchain_library(toolkit.nvrtc_path, "NVRTC"), {}});
  NvrtcApi& api = loaded->api;
  SymbolBinder(loaded->library)(api.version, "nvrtcVersion")(api.get_num_supported_archs, "nvrtcGetNumSupportedArchs")(
    api.get_supported_archs, "nvrtcGetSupportedArchs")(api.get_error_string, "nvrtcGetErrorString")(
    api.create_program, "nvrtcCreateProgram")(api.destroy_program, "nvrtcDestroyProgram")(
    api.compile_program, "nvrtcCompileProgram")(api.get_ptx_size, "nvrtcGetPTXSize")(api.get_ptx, "nvrtcGetPTX")(
    api.get_program_log_size, "nvrtcGetProgramLogSize")(api.get_program_log, "nvrtcGetProgramLog")(
    api.add_name_expression, "nvrtcAddNameExpression")(api.get_lowered_name, "nvrtcGetLoweredName")(
    api.get_ltoir_size, "nvrtcGetLTOIRSize")(api.get_ltoir, "nvrtcGetLTOIR")(
    api.get_cubin_size, "nvrtcGetCUBINSize")(api.get_cubin, "nvrtcGetCUBIN")
    .check("NVRTC");
  return loaded;
}

} // namespace

const NvrtcApi& nvrtc()
{
  return g_loaded.get([] { return load(find_toolkit(current_config())); }).api;
}

const NvrtcApi& nvrtc_for(const Config& config)
{
  const Toolkit toolkit = toolkit_for(config);
  const Loaded& loaded = g_loaded.get([&] { return load(toolkit); });
  if (loaded.path != toolkit.nvrtc_path) {
    throw ToolchainError("this process already uses NVRTC from " + loaded.path + "; a Cache for the toolkit at " +
                           toolkit.root + " (" + toolkit.nvrtc_path + ") cannot use another NVRTC in the same process",
                         -1);
  }
  return loaded.api;
}

bool nvrtc_is_loaded() noexcept
{
  return g_loaded.loaded();
}

std::optional<std::string> nvrtc_environment()
{
  const Loaded* loaded = g_loaded.value();
  return loaded != nullptr ? std::optional<std::string>(loaded->environment) : std::nullopt;
}

} // namespace kjit::rtc
