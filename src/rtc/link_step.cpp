// nvJitLink: create, add inputs, complete, read the cubin; every status checked after its call.
#include "rtc/link_step.hpp"

#include "rtc/nvjitlink_library.hpp"
#include "rtc/nvrtc_step.hpp"
#include "util/unique_handle.hpp"

#include <kjit/cubin.hpp>
#include <kjit/error.hpp>

#include <algorithm>

namespace kjit::rtc {

namespace {

nvJitLinkResult destroy_linker(nvJitLinkHandle handle) noexcept
{
  return nvjitlink().destroy(&handle);
}

using UniqueLinker = util::UniqueHandle<nvJitLinkHandle, destroy_linker>;

std::string linker_log(nvJitLinkHandle handle, bool errors)
{
  const NvJitLinkApi& api = nvjitlink();
  std::size_t size = 0;
  if (handle == nullptr || (errors ? api.get_error_log_size : api.get_info_log_size)(handle, &size) != NVJITLINK_SUCCESS) {
    return {};
  }
  std::string log(size, '\0');
  if (size > 0) {
    (errors ? api.get_error_log : api.get_info_log)(handle, log.data());
  }
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) {
    log.pop_back();
  }
  return log;
}

// nvJitLink 13.0 reports some of ptxas's verdicts on the program ("Entry function 'k' uses too much
// shared data") as NVJITLINK_ERROR_INTERNAL; its log then has ptxas's "error   : ..." lines.
bool program_at_fault(const std::string& log)
{
  return (log.rfind("error", 0) == 0 || log.find("\nerror") != std::string::npos) &&
         log.find("nternal") == std::string::npos;
}

// Throws for a failed call; the error log is read now, after the call that failed.
void check(nvJitLinkResult result, const char* call, nvJitLinkHandle handle, const Program& program, const Arch& arch,
           const std::vector<std::string>& options)
{
  if (result == NVJITLINK_SUCCESS) {
    return;
  }
  const std::string log = linker_log(handle, true);
  if (result == NVJITLINK_ERROR_INTERNAL && program_at_fault(log)) {
    result = NVJITLINK_ERROR_PTX_COMPILE;
  }
  // ptxas refusing the -Xptxas/-maxrregcount options nvJitLink was given: the options' fault, as
  // on the NVRTC path (nvrtc_step.cpp), not the program's.
  if (result == NVJITLINK_ERROR_PTX_COMPILE) {
    for (std::size_t at = 0; at < log.size();) {
      const std::size_t end = std::min(log.find('\n', at), log.size());
      if (ptxas_refused_options(std::string_view(log).substr(at, end - at))) {
        result = NVJITLINK_ERROR_UNRECOGNIZED_OPTION;
        break;
      }
      at = end + 1;
    }
  }
  switch (result) {
  case NVJITLINK_ERROR_PTX_COMPILE:
  case NVJITLINK_ERROR_NVVM_COMPILE:
  case NVJITLINK_ERROR_FINALIZE:
    throw CompileError(program.name, arch.str(), log.empty() ? std::string(call) + " failed" : log, options);
  case NVJITLINK_ERROR_UNRECOGNIZED_OPTION:
  case NVJITLINK_ERROR_INCOMPATIBLE_OPTIONS:
    throw OptionError("nvJitLink rejected the options of " + program.name + " (" + arch.str() + ")" +
                      (log.empty() ? "" : ":\n" + log));
  default:
    throw ToolchainError(std::string(call) + " failed for " + program.name + " (" + arch.str() + "), nvJitLink error " +
                           std::to_string(static_cast<int>(result)) + (log.empty() ? "" : ":\n" + log),
                         result);
  }
}

} // namespace

std::string link_cubin(const std::vector<LinkInput>& inputs, const std::vector<std::string>& options,
                       const Program& program, const Arch& arch, std::string& log)
{
  const NvJitLinkApi& api = nvjitlink();
  std::vector<const char*> argv;
  for (const auto& option : options) {
    argv.push_back(option.c_str());
  }
  UniqueLinker linker;
  nvJitLinkResult result = api.create(linker.out(), static_cast<std::uint32_t>(argv.size()), argv.data());
  check(result, "nvJitLinkCreate", linker.get(), program, arch, options);
  for (const LinkInput& input : inputs) {
    result = api.add_data(linker.get(), input.type, input.data.data(), input.data.size(), program.name.c_str());
    check(result, "nvJitLinkAddData", linker.get(), program, arch, options);
  }
  result = api.complete(linker.get());
  check(result, "nvJitLinkComplete", linker.get(), program, arch, options);
  const std::string info = linker_log(linker.get(), false);
  if (!info.empty()) {
    log += (log.empty() ? "" : "\n") + info;
  }
  std::size_t size = 0;
  result = api.get_linked_cubin_size(linker.get(), &size);
  check(result, "nvJitLinkGetLinkedCubinSize", linker.get(), program, arch, options);
  std::string cubin(size, '\0');
  result = api.get_linked_cubin(linker.get(), cubin.data());
  check(result, "nvJitLinkGetLinkedCubin", linker.get(), program, arch, options);
  std::string why;
  if (!check_cubin(cubin, arch.number(), why)) {
    throw ToolchainError("nvJitLink produced a bad cubin for " + program.name + " (" + arch.str() + "): " + why, -1);
  }
  return cubin;
}

} // namespace kjit::rtc
