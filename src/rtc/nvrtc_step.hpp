// One NVRTC compile and its outputs (PTX, cubin, LTO IR, lowered names), with typed errors.
#pragma once

#include "rtc/nvrtc_library.hpp"
#include "util/unique_handle.hpp"

#include <kjit/arch.hpp>
#include <kjit/config.hpp>
#include <kjit/program.hpp>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kjit::rtc {

nvrtcResult destroy_nvrtc_program(nvrtcProgram program) noexcept;
using UniqueProgram = util::UniqueHandle<nvrtcProgram, destroy_nvrtc_program>;

// Throws ToolchainError for a failing NVRTC call; the message is built only on failure.
void check_nvrtc(nvrtcResult result, const char* call, const Program& program, const Arch& arch);

// Compiles `program` with its own options, then `implicit` (-arch and toolkit -I) and `extra`.
// `options` receives what NVRTC was given (for CompileError and the record), `log` its log.
// Throws CompileError (the source or its ptxas step was rejected), OptionError, ToolchainError.
UniqueProgram run_nvrtc(const Program& program, const Arch& arch, const std::vector<std::string>& implicit,
                        const std::vector<std::string>& extra, std::vector<std::string>& options, std::string& log);

// Whether a line of a compile's log is ptxas refusing its options ("ptxas fatal   : Unknown option
// 'x'", "Invalid value 'x' for option 'y'", "argument expected after '-arch'", "'1 -v': expected a
// number"): the options given with -Xptxas are at fault, not the program.
bool ptxas_refused_options(std::string_view line) noexcept;

enum class NvrtcOutput { ptx, cubin, ltoir };

// One output of a compiled program. Only PTX, which is text, loses NVRTC's trailing NUL; the
// cubin and LTO IR are binary and returned byte for byte.
std::string nvrtc_output(nvrtcProgram handle, NvrtcOutput which, const Program& program, const Arch& arch);

// Name expression → lowered name, in the program's order.
std::vector<std::pair<std::string, std::string>> lowered_names(nvrtcProgram handle, const Program& program,
                                                                const Arch& arch);

} // namespace kjit::rtc
