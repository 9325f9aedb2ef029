// nvJitLink's entry points, bound from libnvJitLink with dlopen on first use.
#pragma once

#include <nvJitLink.h>

#include <kjit/config.hpp>

namespace kjit::rtc {

struct NvJitLinkApi {
  decltype(&::__nvJitLinkCreate_13_0) create;
  decltype(&::__nvJitLinkDestroy_13_0) destroy;
  decltype(&::__nvJitLinkAddData_13_0) add_data;
  decltype(&::__nvJitLinkComplete_13_0) complete;
  decltype(&::__nvJitLinkGetLinkedCubinSize_13_0) get_linked_cubin_size;
  decltype(&::__nvJitLinkGetLinkedCubin_13_0) get_linked_cubin;
  decltype(&::__nvJitLinkGetErrorLogSize_13_0) get_error_log_size;
  decltype(&::__nvJitLinkGetErrorLog_13_0) get_error_log;
  decltype(&::__nvJitLinkGetInfoLogSize_13_0) get_info_log_size;
  decltype(&::__nvJitLinkGetInfoLog_13_0) get_info_log;
  decltype(&::nvJitLinkVersion) version;
};

// Loads nvJitLink once per process. Throws ToolchainError if it can't. Thread-safe.
const NvJitLinkApi& nvjitlink();

// The library of `config`'s toolkit: loads it if none is loaded yet; ToolchainError if this
// process already loaded the library of another toolkit (one toolchain per process).
const NvJitLinkApi& nvjitlink_for(const Config& config);

bool nvjitlink_is_loaded() noexcept;

struct NvJitLinkVersion {
  unsigned major = 0;
  unsigned minor = 0;
};

// nvJitLink's version: the loaded library's when this process has one (of
// `config`'s toolkit, as nvjitlink_for()), else asked of a load that is undone at once: a new
// store's first miss learns it without holding nvJitLink's ≈ 26 MB of pages beside NVRTC.
// ToolchainError when it can't be loaded.
NvJitLinkVersion nvjitlink_version(const Config& config);

} // namespace kjit::rtc
