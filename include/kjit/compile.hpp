// In-process compilation: NVRTC (source → PTX) then nvJitLink (PTX → cubin). No cache.
#pragma once

#include <kjit/arch.hpp>
#include <kjit/binary.hpp>
#include <kjit/program.hpp>

#include <string>

namespace kjit {

// Compiles `program` for `arch` without looking at any cache.
// NVRTC and nvJitLink are loaded on the first call. Toolkit headers (cuda_fp16.h, cuda/std/…)
// are found without extra -I options. `auto` resolves to the current device.
// Throws CompileError (the source was rejected), OptionError, ArchError, ToolchainError; CudaError
// when `auto` needs a device and there is no usable driver (see current_device_arch).
// Thread-safe: distinct calls run in parallel.
Binary compile(const Program& program, const Arch& arch);

struct ToolchainVersions {
  int nvrtc_major = 0;
  int nvrtc_minor = 0;
  int nvjitlink_major = 0;
  int nvjitlink_minor = 0;
};

// The versions of the NVRTC and nvJitLink libraries kjit uses. Loads NVRTC; nvJitLink is loaded to
// be asked and let go again, unless this process already links with it.
ToolchainVersions toolchain_versions();

// True once this process has loaded NVRTC (resp. nvJitLink). Used to prove warm starts don't.
bool nvrtc_loaded() noexcept;
bool nvjitlink_loaded() noexcept;

} // namespace kjit
