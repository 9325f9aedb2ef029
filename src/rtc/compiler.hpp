// Library-internal compile entry points shared by kjit::compile() and the cache.
#pragma once

#include <kjit/binary.hpp>
#include <kjit/compile.hpp>
#include <kjit/config.hpp>

#include "util/test_hook.hpp"

#include <string>

namespace kjit::rtc {

// Compiles for a resolved (non-auto) arch with the given settings. Same errors as kjit::compile.
// On a thread with a CompileDelegate installed, the delegate compiles instead.
Binary compile(const Config& config, const Program& program, const Arch& arch);

// Makes this thread's compile() calls go elsewhere (a batch's worker process). Used by
// Cache::get_many so that the cache's lookup, single flight and storing stay the same.
class CompileDelegate {
public:
  virtual ~CompileDelegate() = default;
  virtual Binary compile(const Config& config, const Program& program, const Arch& arch) = 0;
};

// Whether this thread's compile() calls go to a CompileDelegate.
bool compile_delegated() noexcept;

// Installs `delegate` (may be null) for the calling thread until destroyed; restores the previous.
class ScopedCompileDelegate {
public:
  explicit ScopedCompileDelegate(CompileDelegate* delegate) noexcept;
  ~ScopedCompileDelegate();
  ScopedCompileDelegate(const ScopedCompileDelegate&) = delete;
  ScopedCompileDelegate& operator=(const ScopedCompileDelegate&) = delete;

private:
  CompileDelegate* m_previous;
};

// Options NVRTC receives besides the program's own: -arch (sm_XY for a real arch, compute_XY for a
// virtual one) and the toolkit's -I folders.
std::vector<std::string> implicit_options(const Config& config, const Arch& arch);

// A cubin for `arch` made by nvJitLink from PTX (relocatable PTX → SASS: helpers stay calls, so
// the code can be worse than compile()'s) or from LTO IR (-lto: whole-program). The program's
// ptxas-level options are forwarded; `log` gets nvJitLink's warnings. Errors as link_cubin.
std::string cubin_from_ptx(const Program& program, const std::string& ptx, const Arch& arch, std::string& log);
std::string cubin_from_ltoir(const Program& program, const std::string& ltoir, const Arch& arch, std::string& log);

// NVVM LTO IR of the program (NVRTC with -dlto), for the mirror's ir/ folder when dump_ir is on.
std::string compile_ltoir(const Config& config, const Program& program, const Arch& arch);

// NVRTC's build identity ("13.0 V13.0.88 CL-36424714"): version plus the build read from a PTX
// header: the first one a compile of this process made (NVRTC writes it into every PTX), else that
// of a tiny probe program, compiled with `config` (the Cache's own: never the environment's,
// whose settings a Cache given its Config does not read). While a CompileAhead lives, waits for
// its compile instead of probing. Loads NVRTC and compiles; only called on a miss.
std::string nvrtc_build_identity(const Config& config);
// While one lives, a compile is under way on another thread (a speculating miss's) whose PTX will
// name NVRTC's build: nvrtc_build_identity() waits for it, not compiling its probe (which NVRTC's
// one compile at a time would run after it, ≈ 20 ms on the caller's path). Made before the
// threads that may ask start; ended when that compile returned.
class CompileAhead {
public:
  CompileAhead();
  ~CompileAhead();
  CompileAhead(const CompileAhead&) = delete;
  CompileAhead& operator=(const CompileAhead&) = delete;
};
// Test hook: how many probes nvrtc_build_identity() compiled in this process (0 in a fork()ed
// child until it compiles one).
KJIT_TEST_HOOK int build_identity_probes() noexcept;

// `auto` becomes the current device's arch (CudaError if there is none); others are returned as is.
Arch resolve_arch(const Arch& arch);

} // namespace kjit::rtc
