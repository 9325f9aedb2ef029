// The compile paths: NVRTC for a real arch (whole-program cubin and PTX in one compile), NVRTC →
// PTX for a virtual arch, NVRTC -dlto → nvJitLink -lto when the program asks for LTO.
#include "rtc/compiler.hpp"

#include "rtc/compile_options.hpp"
#include "rtc/library_loader.hpp"
#include "rtc/link_step.hpp"
#include "rtc/nvjitlink_library.hpp"
#include "rtc/nvrtc_step.hpp"
#include "rtc/option_spelling.hpp"
#include "rtc/toolkit.hpp"
#include "util/fork_safe.hpp"
#include "util/stopwatch.hpp"

#include <kjit/cubin.hpp>
#include <kjit/driver.hpp>
#include <kjit/error.hpp>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>

namespace kjit::rtc {

namespace {

void check_supported(const Arch& arch)
{
  // Arch-specific targets (sm_90a) begin with 9.0, family ones (sm_100f) with 10.0; NVRTC fails on
  // the others as on a compile error ("invalid or no value specified with --nv_arch flag").
  if ((arch.variant() == 'a' && arch.number() < 90) || (arch.variant() == 'f' && arch.number() < 100)) {
    throw ArchError("arch " + arch.str() + " does not exist: the '" + std::string(1, arch.variant()) + "' variant" +
                    (arch.variant() == 'a' ? " (arch-specific) begins with sm_90a" : " (family) begins with sm_100f"));
  }
  const std::vector<int> archs = supported_archs();
  if (std::find(archs.begin(), archs.end(), arch.number()) == archs.end()) {
    std::string list;
    for (int a : archs) {
      list += (list.empty() ? "" : " ") + std::to_string(a);
    }
    int major = 0;
    int minor = 0;
    nvrtc().version(&major, &minor);
    throw ArchError("arch " + arch.str() + " is not supported by NVRTC " + std::to_string(major) + "." +
                    std::to_string(minor) + " (supported: " + list + ")");
  }
}

void check_nvrtc_cubin(const Binary& binary, const Program& program, const Arch& arch)
{
  std::string why;
  if (!check_cubin(binary.cubin, arch.number(), why)) {
    throw ToolchainError("NVRTC produced a bad cubin for " + program.name + " (" + arch.str() + "): " + why, -1);
  }
}

thread_local CompileDelegate* t_delegate = nullptr;

// NVRTC's build identity, once a PTX header showed it (one NVRTC per process), and the compiles
// ahead that may show it. Fresh in a fork()ed child (its parent's compiles are not its own).
struct BuildIdentity {
  std::mutex mutex;
  std::condition_variable known_or_none_ahead;
  std::string known;
  int ahead = 0;
  std::atomic<int> probes{0};
};
const util::ForkFresh<BuildIdentity> g_build_identity;

// The identity a PTX header names: "// Cuda compilation tools, release 13.0, V13.0.88" and
// "// Compiler Build ID: CL-36424714" in its first lines; empty when it names none.
// NVRTC's "major.minor".
std::string nvrtc_version_text()
{
  int major = 0;
  int minor = 0;
  nvrtc().version(&major, &minor);
  return std::to_string(major) + "." + std::to_string(minor);
}

std::string identity_in(const std::string& ptx)
{
  std::string identity = nvrtc_version_text();
  bool named = false;
  for (const char* marker : {", V", "Compiler Build ID: "}) {
    const auto at = ptx.find(marker);
    if (at != std::string::npos && at < 1024) {
      const auto start = at + std::char_traits<char>::length(marker);
      identity += " " + std::string(marker == std::string(", V") ? "V" : "") +
                  ptx.substr(start, ptx.find('\n', start) - start);
      named = true;
    }
  }
  return named ? identity : std::string();
}

void learn_build_identity(const std::string& ptx)
{
  BuildIdentity& state = *g_build_identity;
  {
    std::lock_guard lock(state.mutex);
    if (!state.known.empty()) {
      return;
    }
  }
  std::string identity = identity_in(ptx);
  if (identity.empty()) {
    return;
  }
  std::lock_guard lock(state.mutex);
  if (state.known.empty()) {
    state.known = std::move(identity);
    state.known_or_none_ahead.notify_all();
  }
}

} // namespace

CompileAhead::CompileAhead()
{
  BuildIdentity& state = *g_build_identity;
  std::lock_guard lock(state.mutex);
  ++state.ahead;
}

CompileAhead::~CompileAhead()
{
  BuildIdentity& state = *g_build_identity;
  std::lock_guard lock(state.mutex);
  --state.ahead;
  state.known_or_none_ahead.notify_all();
}

bool compile_delegated() noexcept
{
  return t_delegate != nullptr;
}

ScopedCompileDelegate::ScopedCompileDelegate(CompileDelegate* delegate) noexcept : m_previous(t_delegate)
{
  t_delegate = delegate;
}

ScopedCompileDelegate::~ScopedCompileDelegate()
{
  t_delegate = m_previous;
}

std::vector<std::string> implicit_options(const Config& config, const Arch& arch)
{
  std::vector<std::string> options{"-arch=" + (arch.is_virtual() ? arch.virtual_name() : arch.real_name())};
  for (const auto& dir : toolkit_for(config).include_dirs) {
    options.push_back("-I" + dir);
  }
  return options;
}

Arch resolve_arch(const Arch& arch)
{
  if (!arch.is_auto()) {
    return arch;
  }
  return current_device_arch(kjit::supported_archs);
}

Binary compile(const Config& config, const Program& given, const Arch& requested)
{
  std::optional<Program> storage;
  const Program& program = as_nvrtc_reads(given, storage);  // checked as NVRTC reads it (" -arch=…")
  if (CompileDelegate* delegate = t_delegate) {
    const ScopedCompileDelegate direct(nullptr);  // the delegate may compile in-process
    return delegate->compile(config, program, requested);
  }
  const util::Stopwatch total;
  const Arch arch = resolve_arch(requested);
  check_options(program, arch);
  const CubinPath path = cubin_path(program, arch);
  Binary binary;
  binary.arch = arch.str();
  binary.cubin_path = cubin_path_name(path);
  const util::Stopwatch load_watch;
  nvrtc();
  if (path == CubinPath::nvjitlink_lto) {
    nvjitlink();
  }
  // This process's load time not reported yet (the libraries may have been loaded before, by the
  // key's toolchain probe): the first compile of a process reports it, and counts it in its total.
  const double loaded_here = load_watch.elapsed_ms();
  binary.timings.load_ms = std::max(take_unreported_load_ms(), loaded_here);
  const double loaded_before = binary.timings.load_ms - loaded_here;
  check_supported(arch);
  std::vector<std::string> options;
  const util::Stopwatch nvrtc_watch;
  const UniqueProgram handle = run_nvrtc(program, arch, implicit_options(config, arch), {}, options, binary.log);
  binary.lowered_names = lowered_names(handle.get(), program, arch);
  if (path == CubinPath::nvjitlink_lto) {
    const std::string ltoir = nvrtc_output(handle.get(), NvrtcOutput::ltoir, program, arch);
    binary.timings.nvrtc_ms = nvrtc_watch.elapsed_ms();
    const util::Stopwatch link_watch;
    binary.cubin = link_cubin({{NVJITLINK_INPUT_LTOIR, ltoir}}, linker_options(program.options, arch, true), program,
                              arch, binary.log);
    binary.timings.link_ms = link_watch.elapsed_ms();
  } else {
    binary.ptx = nvrtc_output(handle.get(), NvrtcOutput::ptx, program, arch);
    learn_build_identity(binary.ptx);
    if (path == CubinPath::nvrtc) {
      binary.cubin = nvrtc_output(handle.get(), NvrtcOutput::cubin, program, arch);
      check_nvrtc_cubin(binary, program, arch);
    }
    binary.timings.nvrtc_ms = nvrtc_watch.elapsed_ms();
  }
  binary.timings.total_ms = total.elapsed_ms() + loaded_before;
  return binary;
}

std::string cubin_from_ptx(const Program& program, const std::string& ptx, const Arch& arch, std::string& log)
{
  return link_cubin({{NVJITLINK_INPUT_PTX, ptx}}, linker_options(program.options, arch, false), program, arch, log);
}

std::string cubin_from_ltoir(const Program& program, const std::string& ltoir, const Arch& arch, std::string& log)
{
  return link_cubin({{NVJITLINK_INPUT_LTOIR, ltoir}}, linker_options(program.options, arch, true), program, arch, log);
}

std::string compile_ltoir(const Config& config, const Program& program, const Arch& arch)
{
  std::vector<std::string> options;
  std::string log;
  const bool has_lto = std::any_of(program.options.begin(), program.options.end(), is_lto_option);
  const UniqueProgram handle = run_nvrtc(program, arch, implicit_options(config, arch),
                                         has_lto ? std::vector<std::string>{} : std::vector<std::string>{"-dlto"},
                                         options, log);
  return nvrtc_output(handle.get(), NvrtcOutput::ltoir, program, arch);
}

std::string nvrtc_build_identity(const Config& config)
{
  BuildIdentity& state = *g_build_identity;
  {
    std::unique_lock lock(state.mutex);
    state.known_or_none_ahead.wait(lock, [&] { return !state.known.empty() || state.ahead == 0; });
    if (!state.known.empty()) {
      return state.known;
    }
  }
  state.probes.fetch_add(1, std::memory_order_relaxed);
  Program probe{"kjit_probe.cu", "__global__ void kjit_probe() {}\n", {}, {}, {}};
  const std::vector<int> archs = supported_archs();
  const Arch arch = Arch::parse("compute_" + std::to_string(archs.empty() ? 75 : archs.front()));
  // Always here: a batch thread's worker would count the probe as its item's compile and blame its
  // time limit on it.
  const ScopedCompileDelegate in_process(nullptr);
  const Binary binary = compile(config, probe, arch);  // (learns the identity from its PTX)
  // The probe is no compile of the user's: the load time it took is left for the first one.
  add_unreported_load_ms(binary.timings.load_ms);
  const std::string identity = identity_in(binary.ptx);
  return identity.empty() ? nvrtc_version_text() : identity;  // (a PTX header without the build)
}

int build_identity_probes() noexcept
{
  return g_build_identity->probes.load(std::memory_order_relaxed);
}

} // namespace kjit::rtc

namespace kjit {

Binary compile(const Program& program, const Arch& arch)
{
  return rtc::compile(current_config(), program, arch);
}

std::vector<int> supported_archs()
{
  const rtc::NvrtcApi& api = rtc::nvrtc();
  int count = 0;
  api.get_num_supported_archs(&count);
  std::vector<int> archs(static_cast<std::size_t>(count));
  api.get_supported_archs(archs.data());
  return archs;
}

ToolchainVersions toolchain_versions()
{
  ToolchainVersions versions;
  rtc::nvrtc().version(&versions.nvrtc_major, &versions.nvrtc_minor);
  // nvJitLink's asked of a load undone at once, unless this process links with it.
  const rtc::NvJitLinkVersion nvjitlink = rtc::nvjitlink_version(current_config());
  versions.nvjitlink_major = static_cast<int>(nvjitlink.major);
  versions.nvjitlink_minor = static_cast<int>(nvjitlink.minor);
  return versions;
}

bool nvrtc_loaded() noexcept
{
  return rtc::nvrtc_is_loaded();
}

bool nvjitlink_loaded() noexcept
{
  return rtc::nvjitlink_is_loaded();
}

} // namespace kjit
