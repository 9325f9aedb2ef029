// Which step makes the cubin for a program and arch, and which of the program's options reach it.
#pragma once

#include <kjit/arch.hpp>
#include <kjit/program.hpp>

#include <string>
#include <vector>

namespace kjit::rtc {

// How a compile makes its cubin (recorded in Binary::cubin_path, options.txt and the record).
enum class CubinPath {
  none,           // virtual arch: PTX only
  nvrtc,          // NVRTC for the real arch: whole-program PTX → SASS in one compile (the default)
  nvjitlink_lto,  // the program asked for -dlto: NVRTC LTO IR → nvJitLink -lto
  nvjitlink_ptx,  // PTX → nvJitLink (relocatable PTX → SASS): never taken by the cache, see compile-paths.md
};

// "none", "nvrtc", "nvjitlink-lto", "nvjitlink-ptx".
const char* cubin_path_name(CubinPath path) noexcept;

// The path compile() takes for `program` on `arch` (not `auto`).
CubinPath cubin_path(const Program& program, const Arch& arch);

// -arch, --gpu-architecture, --gpu-name: kjit sets the arch itself.
bool is_arch_option(const std::string& option);
// -dlto, --dlink-time-opt: the program asks for link-time optimisation.
bool is_lto_option(const std::string& option);

// Throws OptionError for an option kjit would otherwise drop silently: one that sets the arch,
// -optix-ir (NVRTC then makes OptiX IR, no PTX and no cubin),
// or -Xptxas/--ptxas-options for a virtual arch, where no step makes a cubin and the driver's JIT
// takes only -maxrregcount, -lineinfo and -G (those are accepted: a PTX load passes them on).
void check_options(const Program& program, const Arch& arch);

// nvJitLink's options for a cubin of `arch`: -arch, -lto when `lto`, and the program's
// ptxas-level options translated (-maxrregcount, -Xptxas, -lineinfo, -G → -g).
std::vector<std::string> linker_options(const std::vector<std::string>& program_options, const Arch& arch, bool lto);

} // namespace kjit::rtc
