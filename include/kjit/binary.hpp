// The result of compiling a program for one arch: PTX, cubin, lowered names, log, timings, and
// the kernels read from the cubin.
#pragma once

#include <kjit/cubin.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kjit {

// Wall time of each stage of one compile, in milliseconds. Zero for a stage that did not run.
struct StageTimings {
  double load_ms = 0;   // dlopen of NVRTC/nvJitLink (first compile of a process only)
  double nvrtc_ms = 0;  // source → PTX (and the cubin, for a real arch)
  double link_ms = 0;   // PTX or LTO IR → cubin (nvJitLink; 0 when NVRTC made the cubin)
  double total_ms = 0;  // whole compile() call
};

struct Binary {
  std::string arch;   // "sm_90" (or "compute_90": PTX only)
  std::string ptx;
  std::string cubin;  // empty for a virtual arch
  // Which step made the cubin: "nvrtc" (NVRTC for the real arch: whole-program code, the default),
  // "nvjitlink-lto" (the program asked for -dlto: NVRTC LTO IR → nvJitLink -lto; `ptx` is then
  // empty), "none" (virtual arch). Empty for a binary stored before kjit recorded it.
  std::string cubin_path;
  // name expression → lowered (mangled) name, in the program's order.
  std::vector<std::pair<std::string, std::string>> lowered_names;
  std::string log;    // NVRTC's and nvJitLink's messages (warnings), possibly empty
  StageTimings timings;

  // The lowered name of `expression`. Throws kjit::Error if it was not a name expression.
  const std::string& lowered_name(std::string_view expression) const;

  // Every kernel of `cubin` with its registers, shared/local memory and parameter layout, read
  // from the ELF (see read_kernels); empty for a PTX-only binary. Throws kjit::Error if the cubin
  // is malformed.
  std::vector<KernelInfo> kernels() const;
  // The kernel whose lowered (mangled) name is `name`, or whose name expression is `name`;
  // nothing if the cubin has no such kernel (or there is no cubin).
  std::optional<KernelInfo> kernel(std::string_view name) const;
};

} // namespace kjit
