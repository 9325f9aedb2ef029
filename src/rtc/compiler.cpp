// NVRTC → PTX (virtual arch) → nvJitLink → cubin (real arch), in-process.
#include "rtc/compiler.hpp"

#include "rtc/nvjitlink_library.hpp"
#include "rtc/nvrtc_library.hpp"
#include "rtc/toolkit.hpp"
#include "util/stopwatch.hpp"
#include "util/unique_handle.hpp"

#include <kjit/cubin.hpp>
#include <kjit/driver.hpp>
#include <kjit/error.hpp>

#include <algorithm>

namespace kjit::rtc {

namespace {

nvrtcResult destroy_program(nvrtcProgram program) noexcept
{
  return nvrtc().destroy_program(&program);
}

nvJitLinkResult destroy_linker(nvJitLinkHandle handle) noexcept
{
  return nvjitlink().destroy(&handle);
}

using UniqueProgram = util::UniqueHandle<nvrtcProgram, destroy_program>;
using UniqueLinker = util::UniqueHandle<nvJitLinkHandle, destroy_linker>;

// Throws ToolchainError for a failing NVRTC call; the message is built only on failure.
void check_nvrtc(nvrtcResult result, const char* call, const Program& program, const Arch& arch)
{
  if (result != NVRTC_SUCCESS) {
    throw ToolchainError(std::string(call) + " failed for " + program.name + " (" + arch.str() +
                           "): " + nvrtc().get_error_string(result),
                         result);
  }
}

void check_nvjitlink(nvJitLinkResult result, const char* call, const Program& program, const Arch& arch,
                     const std::string& log = {})
{
  if (result != NVJITLINK_SUCCESS) {
    throw ToolchainError(std::string(call) + " failed for " + program.name + " (" + arch.str() + "), nvJitLink error " +
                           std::to_string(static_cast<int>(result)) + (log.empty() ? "" : ":\n" + log),
                         result);
  }
}

bool is_arch_option(const std::string& option)
{
  for (const char* prefix : {"-arch", "--gpu-architecture", "--gpu-name"}) {
    if (option.rfind(prefix, 0) == 0) {
      return true;
    }
  }
  return false;
}

void check_supported(const Arch& arch)
{
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

std::string program_log(nvrtcProgram handle)
{
  std::size_t size = 0;
  nvrtc().get_program_log_size(handle, &size);
  std::string log(size, '\0');
  nvrtc().get_program_log(handle, log.data());
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) {
    log.pop_back();
  }
  return log;
}

std::string linker_log(nvJitLinkHandle handle, bool errors)
{
  const NvJitLinkApi& api = nvjitlink();
  std::size_t size = 0;
  (errors ? api.get_error_log_size : api.get_info_log_size)(handle, &size);
  std::string log(size, '\0');
  if (size > 0) {
    (errors ? api.get_error_log : api.get_info_log)(handle, log.data());
  }
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) {
    log.pop_back();
  }
  return log;
}

// Creates and compiles the NVRTC program; CompileError/OptionError/ToolchainError on failure.
UniqueProgram run_nvrtc(const Config& config, const Program& program, const Arch& arch,
                        const std::vector<std::string>& extra_options, std::vector<std::string>& options,
                        std::string& log)
{
  const NvrtcApi& api = nvrtc();
  std::vector<const char*> header_names;
  std::vector<const char*> header_sources;
  for (const auto& [name, content] : program.headers) {
    header_names.push_back(name.c_str());
    header_sources.push_back(content.c_str());
  }
  UniqueProgram handle;
  check_nvrtc(api.create_program(handle.out(), program.source.c_str(), program.name.c_str(),
                                 static_cast<int>(header_names.size()), header_sources.data(), header_names.data()),
              "nvrtcCreateProgram", program, arch);
  for (const auto& expression : program.name_expressions) {
    check_nvrtc(api.add_name_expression(handle.get(), expression.c_str()), "nvrtcAddNameExpression", program, arch);
  }
  options = program.options;
  for (auto& option : implicit_options(config, arch)) {
    options.push_back(std::move(option));
  }
  std::vector<const char*> argv;
  for (const auto& option : options) {
    argv.push_back(option.c_str());
  }
  for (const auto& option : extra_options) {
    argv.push_back(option.c_str());
  }
  const nvrtcResult result = api.compile_program(handle.get(), static_cast<int>(argv.size()), argv.data());
  log = program_log(handle.get());
  if (result == NVRTC_ERROR_COMPILATION) {
    throw CompileError(program.name, arch.str(), log, options);
  }
  if (result == NVRTC_ERROR_INVALID_OPTION) {
    throw OptionError("NVRTC rejected the options of " + program.name + " (" + arch.str() + ")" +
                      (log.empty() ? "" : ":\n" + log));
  }
  check_nvrtc(result, "nvrtcCompileProgram", program, arch);
  return handle;
}

// Reads an NVRTC output of `size_call`/`get_call` (PTX, LTO IR) into a string.
template <typename SizeCall, typename GetCall>
std::string nvrtc_output(nvrtcProgram handle, SizeCall size_call, GetCall get_call, const char* what,
                         const Program& program, const Arch& arch)
{
  std::size_t size = 0;
  check_nvrtc(size_call(handle, &size), what, program, arch);
  std::string out(size, '\0');
  check_nvrtc(get_call(handle, out.data()), what, program, arch);
  if (!out.empty() && out.back() == '\0') {
    out.pop_back();
  }
  return out;
}

// The PTX of `program` and its lowered names (NVRTC stage).
void run_nvrtc_to_ptx(const Config& config, const Program& program, const Arch& arch, Binary& binary,
                      std::vector<std::string>& options)
{
  const NvrtcApi& api = nvrtc();
  const UniqueProgram handle = run_nvrtc(config, program, arch, {}, options, binary.log);
  binary.ptx = nvrtc_output(handle.get(), api.get_ptx_size, api.get_ptx, "nvrtcGetPTX", program, arch);
  for (const auto& expression : program.name_expressions) {
    const char* lowered = nullptr;
    check_nvrtc(api.get_lowered_name(handle.get(), expression.c_str(), &lowered), "nvrtcGetLoweredName", program, arch);
    binary.lowered_names.emplace_back(expression, lowered);
  }
}

std::vector<std::string> linker_options(const Program& program, const Arch& arch)
{
  std::vector<std::string> options{"-arch=" + arch.real_name()};
  for (const auto& option : program.options) {
    if (option == "-lineinfo" || option == "--generate-line-info") {
      options.push_back("-lineinfo");
    } else if (option == "-G" || option == "--device-debug") {
      options.push_back("-g");
    }
  }
  return options;
}

// The cubin for the real arch (nvJitLink stage).
void run_nvjitlink(const Program& program, const Arch& arch, Binary& binary)
{
  const NvJitLinkApi& api = nvjitlink();
  const std::vector<std::string> options = linker_options(program, arch);
  std::vector<const char*> argv;
  for (const auto& option : options) {
    argv.push_back(option.c_str());
  }
  UniqueLinker linker;
  check_nvjitlink(api.create(linker.out(), static_cast<std::uint32_t>(argv.size()), argv.data()), "nvJitLinkCreate",
                  program, arch);
  check_nvjitlink(api.add_data(linker.get(), NVJITLINK_INPUT_PTX, binary.ptx.data(), binary.ptx.size(),
                               program.name.c_str()),
                  "nvJitLinkAddData", program, arch, linker_log(linker.get(), true));
  check_nvjitlink(api.complete(linker.get()), "nvJitLinkComplete", program, arch, linker_log(linker.get(), true));
  const std::string info = linker_log(linker.get(), false);
  if (!info.empty()) {
    binary.log += (binary.log.empty() ? "" : "\n") + info;
  }
  std::size_t size = 0;
  check_nvjitlink(api.get_linked_cubin_size(linker.get(), &size), "nvJitLinkGetLinkedCubinSize", program, arch);
  binary.cubin.assign(size, '\0');
  check_nvjitlink(api.get_linked_cubin(linker.get(), binary.cubin.data()), "nvJitLinkGetLinkedCubin", program, arch);
  std::string why;
  if (!check_cubin(binary.cubin, arch.number(), why)) {
    throw ToolchainError("nvJitLink produced a bad cubin for " + program.name + " (" + arch.str() + "): " + why, -1);
  }
}

} // namespace

std::vector<std::string> implicit_options(const Config& config, const Arch& arch)
{
  std::vector<std::string> options{"-arch=" + arch.virtual_name()};
  for (const auto& dir : find_toolkit(config).include_dirs) {
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

Binary compile(const Config& config, const Program& program, const Arch& requested)
{
  const util::Stopwatch total;
  for (const auto& option : program.options) {
    if (is_arch_option(option)) {
      throw OptionError("option '" + option + "' of " + program.name +
                        " sets the arch; pass the arch to compile() or set KJIT_ARCH instead");
    }
  }
  const Arch arch = resolve_arch(requested);
  Binary binary;
  binary.arch = arch.str();
  const util::Stopwatch load_watch;
  nvrtc();
  if (!arch.is_virtual()) {
    nvjitlink();
  }
  binary.timings.load_ms = load_watch.elapsed_ms();
  check_supported(arch);
  std::vector<std::string> options;
  const util::Stopwatch nvrtc_watch;
  run_nvrtc_to_ptx(config, program, arch, binary, options);
  binary.timings.nvrtc_ms = nvrtc_watch.elapsed_ms();
  if (!arch.is_virtual()) {
    const util::Stopwatch link_watch;
    run_nvjitlink(program, arch, binary);
    binary.timings.link_ms = link_watch.elapsed_ms();
  }
  binary.timings.total_ms = total.elapsed_ms();
  return binary;
}

std::string compile_ltoir(const Config& config, const Program& program, const Arch& arch)
{
  const NvrtcApi& api = nvrtc();
  std::vector<std::string> options;
  std::string log;
  const UniqueProgram handle = run_nvrtc(config, program, arch, {"-dlto"}, options, log);
  return nvrtc_output(handle.get(), api.get_ltoir_size, api.get_ltoir, "nvrtcGetLTOIR", program, arch);
}

std::string nvrtc_build_identity()
{
  int major = 0;
  int minor = 0;
  nvrtc().version(&major, &minor);
  Program probe{"kjit_probe.cu", "__global__ void kjit_probe() {}\n", {}, {}, {}};
  const std::vector<int> archs = supported_archs();
  const Arch arch = Arch::parse("compute_" + std::to_string(archs.empty() ? 75 : archs.front()));
  const Binary binary = compile(current_config(), probe, arch);
  // The PTX header names the build: "// Cuda compilation tools, release 13.0, V13.0.88" and
  // "// Compiler Build ID: CL-36424714".
  std::string identity = std::to_string(major) + "." + std::to_string(minor);
  for (const char* marker : {", V", "Compiler Build ID: "}) {
    const auto at = binary.ptx.find(marker);
    if (at != std::string::npos && at < 1024) {
      const auto start = at + std::char_traits<char>::length(marker);
      identity += " " + std::string(marker == std::string(", V") ? "V" : "") +
                  binary.ptx.substr(start, binary.ptx.find('\n', start) - start);
    }
  }
  return identity;
}

std::string nvjitlink_identity()
{
  unsigned major = 0;
  unsigned minor = 0;
  nvjitlink().version(&major, &minor);
  return std::to_string(major) + "." + std::to_string(minor);
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
  unsigned major = 0;
  unsigned minor = 0;
  rtc::nvjitlink().version(&major, &minor);
  versions.nvjitlink_major = static_cast<int>(major);
  versions.nvjitlink_minor = static_cast<int>(minor);
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
