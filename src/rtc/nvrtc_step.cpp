// The NVRTC step: create, compile, read outputs; every status checked.
#include "rtc/nvrtc_step.hpp"

#include "rtc/option_spelling.hpp"

#include <kjit/error.hpp>

#include <string_view>

namespace kjit::rtc {

namespace {

std::string program_log(nvrtcProgram handle)
{
  std::size_t size = 0;
  if (nvrtc().get_program_log_size(handle, &size) != NVRTC_SUCCESS) {
    return {};
  }
  std::string log(size, '\0');
  nvrtc().get_program_log(handle, log.data());
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) {
    log.pop_back();
  }
  return log;
}

// Options for ptxas and NVVM (-Xptxas, -Xnvvm) pass through NVRTC, which reports their rejection
// as a failed compile: "ptxas fatal   : Unknown option 'x'", "ptxas fatal   : Invalid value 'x' for
// option 'y'", "libnvvm : error: -x is an unsupported option". The options are at fault, not the
// program: an OptionError, which the cache does not remember as the program's compile error.
// Only the log's last line counts: ptxas and NVVM run after the front end succeeded, so their
// rejection ends the log, while a front-end error ends it with "N errors detected in the
// compilation of ..." (or "Compilation terminated."), whatever the program's own messages (a
// static_assert's, a #pragma message) put in the lines before.
bool options_rejected(const std::string& log)
{
  const std::size_t last = log.find_last_not_of("\n");
  if (last == std::string::npos) {
    return false;
  }
  const std::size_t newline = log.rfind('\n', last);
  const std::size_t start = newline == std::string::npos ? 0 : newline + 1;
  const std::string_view line(log.data() + start, last + 1 - start);
  if (ptxas_refused_options(line)) {
    return true;
  }
  return line.rfind("libnvvm : error: ", 0) == 0 && line.find(" is an unsupported option") != std::string_view::npos;
}

// Whether NVRTC's log says the compile ran out of memory or of room for a file it maps (its
// front end's "catastrophic error: unable to obtain mapped memory", "out of memory",
// "insufficient memory for PCH memory allocation"): a state of this process, not the program's
// error, so never remembered as one.
bool ran_out(const std::string& log)
{
  for (const char* message : {"catastrophic error: unable to obtain mapped memory", "catastrophic error: out of memory",
                              "insufficient memory for PCH memory allocation"}) {
    if (log.find(message) != std::string::npos) {
      return true;
    }
  }
  return false;
}

} // namespace

bool ptxas_refused_options(std::string_view line) noexcept
{
  if (line.rfind("ptxas fatal", 0) != 0) {
    return false;
  }
  for (const char* verdict : {": Unknown option '", ": Invalid value '", ": argument expected after '", "': expected a number"}) {
    if (line.find(verdict) != std::string_view::npos) {
      return true;
    }
  }
  return false;
}

nvrtcResult destroy_nvrtc_program(nvrtcProgram program) noexcept
{
  return nvrtc().destroy_program(&program);
}

void check_nvrtc(nvrtcResult result, const char* call, const Program& program, const Arch& arch)
{
  if (result != NVRTC_SUCCESS) {
    throw ToolchainError(std::string(call) + " failed for " + program.name + " (" + arch.str() +
                           "): " + nvrtc().get_error_string(result),
                         result);
  }
}

UniqueProgram run_nvrtc(const Program& program, const Arch& arch, const std::vector<std::string>& implicit,
                        const std::vector<std::string>& extra, std::vector<std::string>& options, std::string& log)
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
  if (const std::string* open = option_missing_its_value(program.options)) {
    throw OptionError("option '" + *open + "' of " + program.name + " needs a value (the next option)");
  }
  options = program.options;
  options.insert(options.end(), implicit.begin(), implicit.end());
  std::vector<std::string> all = without_unfoldered_pch(options);
  all.insert(all.end(), extra.begin(), extra.end());
  if (const std::string* fatal = option_that_aborts_nvrtc(all, program.name)) {
    throw OptionError("option '" + *fatal + "' of " + program.name +
                      " can't be given to NVRTC: it would end the process on it (an empty or invalid value, or "
                      "a time trace file it can't write)");
  }
  std::vector<const char*> argv;
  for (const auto& option : all) {
    argv.push_back(option.c_str());
  }
  const nvrtcResult result = api.compile_program(handle.get(), static_cast<int>(argv.size()), argv.data());
  log = program_log(handle.get());
  if (result == NVRTC_ERROR_COMPILATION && ran_out(log)) {
    throw ToolchainError("NVRTC ran out of memory or of room for a file compiling " + program.name + " (" + arch.str() +
                           "); not remembered as the program's error:\n" + log,
                         result);
  }
  if (result == NVRTC_ERROR_COMPILATION && !options_rejected(log)) {
    throw CompileError(program.name, arch.str(), log, options);
  }
  if (result == NVRTC_ERROR_INVALID_OPTION || result == NVRTC_ERROR_COMPILATION) {
    throw OptionError("NVRTC rejected the options of " + program.name + " (" + arch.str() + ")" +
                      (log.empty() ? "" : ":\n" + log));
  }
  check_nvrtc(result, "nvrtcCompileProgram", program, arch);
  return handle;
}

std::string nvrtc_output(nvrtcProgram handle, NvrtcOutput which, const Program& program, const Arch& arch)
{
  const NvrtcApi& api = nvrtc();
  std::size_t size = 0;
  std::string out;
  switch (which) {
  case NvrtcOutput::ptx:
    check_nvrtc(api.get_ptx_size(handle, &size), "nvrtcGetPTXSize", program, arch);
    out.assign(size, '\0');
    check_nvrtc(api.get_ptx(handle, out.data()), "nvrtcGetPTX", program, arch);
    if (!out.empty() && out.back() == '\0') {
      out.pop_back();  // the C string's terminator, not part of the text
    }
    break;
  case NvrtcOutput::cubin:
    check_nvrtc(api.get_cubin_size(handle, &size), "nvrtcGetCUBINSize", program, arch);
    out.assign(size, '\0');
    check_nvrtc(api.get_cubin(handle, out.data()), "nvrtcGetCUBIN", program, arch);
    break;
  case NvrtcOutput::ltoir:
    check_nvrtc(api.get_ltoir_size(handle, &size), "nvrtcGetLTOIRSize", program, arch);
    out.assign(size, '\0');
    check_nvrtc(api.get_ltoir(handle, out.data()), "nvrtcGetLTOIR", program, arch);
    break;
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> lowered_names(nvrtcProgram handle, const Program& program,
                                                                const Arch& arch)
{
  std::vector<std::pair<std::string, std::string>> names;
  for (const auto& expression : program.name_expressions) {
    const char* lowered = nullptr;
    check_nvrtc(nvrtc().get_lowered_name(handle, expression.c_str(), &lowered), "nvrtcGetLoweredName", program, arch);
    names.emplace_back(expression, lowered);
  }
  return names;
}

} // namespace kjit::rtc
