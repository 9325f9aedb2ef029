// NVRTC's entry points, bound from libnvrtc with dlopen on first use.
#pragma once

#include <nvrtc.h>
#include <optional>
#include <string>

#include <kjit/config.hpp>

namespace kjit::rtc {

struct NvrtcApi {
  decltype(&::nvrtcVersion) version;
  decltype(&::nvrtcGetNumSupportedArchs) get_num_supported_archs;
  decltype(&::nvrtcGetSupportedArchs) get_supported_archs;
  decltype(&::nvrtcGetErrorString) get_error_string;
  decltype(&::nvrtcCreateProgram) create_program;
  decltype(&::nvrtcDestroyProgram) destroy_program;
  decltype(&::nvrtcCompileProgram) compile_program;
  decltype(&::nvrtcGetPTXSize) get_ptx_size;
  decltype(&::nvrtcGetPTX) get_ptx;
  decltype(&::nvrtcGetProgramLogSize) get_program_log_size;
  decltype(&::nvrtcGetProgramLog) get_program_log;
  decltype(&::nvrtcAddNameExpression) add_name_expression;
  decltype(&::nvrtcGetLoweredName) get_lowered_name;
  decltype(&::nvrtcGetLTOIRSize) get_ltoir_size;
  decltype(&::nvrtcGetLTOIR) get_ltoir;
  decltype(&::nvrtcGetCUBINSize) get_cubin_size;
  decltype(&::nvrtcGetCUBIN) get_cubin;
};

// Loads NVRTC (and its builtins library, by absolute path, so the embedding program's run path
// does not matter) once per process. Throws ToolchainError if it can't. Thread-safe.
const NvrtcApi& nvrtc();

// The library of `config`'s toolkit: loads it if none is loaded yet; ToolchainError if this
// process already loaded the library of another toolkit (one toolchain per process).
const NvrtcApi& nvrtc_for(const Config& config);

bool nvrtc_is_loaded() noexcept;

// The compiler environment (config's compiler_environment_now()) NVRTC was loaded with, which it
// compiles with for the life of the process; nullopt while it is not loaded.
std::optional<std::string> nvrtc_environment();

} // namespace kjit::rtc
