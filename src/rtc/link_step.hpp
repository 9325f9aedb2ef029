// The nvJitLink step: PTX or LTO IR → cubin of one real arch, with typed errors.
#pragma once

#include <kjit/arch.hpp>
#include <kjit/program.hpp>

#include <nvJitLink.h>

#include <string>
#include <string_view>
#include <vector>

namespace kjit::rtc {

struct LinkInput {
  nvJitLinkInputType type = NVJITLINK_INPUT_PTX;
  std::string_view data;
};

// The cubin nvJitLink makes of `inputs` for `arch` with `options` (see linker_options); its info
// log (warnings) is appended to `log`. The error log is read after the call that failed. Throws
// CompileError when the program is at fault (ptxas or NVVM rejected it, e.g. too much shared
// memory) with that log, OptionError for rejected options, ToolchainError otherwise.
std::string link_cubin(const std::vector<LinkInput>& inputs, const std::vector<std::string>& options,
                       const Program& program, const Arch& arch, std::string& log);

} // namespace kjit::rtc
