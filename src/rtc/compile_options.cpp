// Option classification for the compile paths: arch, LTO and ptxas-level options.
#include "rtc/compile_options.hpp"

#include "options/option_table.hpp"

#include <kjit/error.hpp>

#include <algorithm>

namespace kjit::rtc {

namespace {

bool starts_with(const std::string& text, const char* prefix)
{
  return text.rfind(prefix, 0) == 0;
}

bool is_maxrregcount(const std::string& option)
{
  return options::has(option, options::max_registers);
}

// -Xptxas=X, --ptxas-options=X, or the two-token forms "-Xptxas" "X".
bool is_ptxas_passthrough(const std::string& option)
{
  return options::has(option, options::ptxas_value);
}

std::string value_of(const std::vector<std::string>& options, std::size_t& i)
{
  const std::string& option = options[i];
  const auto equals = option.find('=');
  if (equals != std::string::npos) {
    return option.substr(equals + 1);
  }
  if (i + 1 >= options.size()) {
    throw OptionError("option '" + option + "' needs a value");
  }
  return options[++i];
}

} // namespace

const char* cubin_path_name(CubinPath path) noexcept
{
  switch (path) {
  case CubinPath::none: return "none";
  case CubinPath::nvrtc: return "nvrtc";
  case CubinPath::nvjitlink_lto: return "nvjitlink-lto";
  case CubinPath::nvjitlink_ptx: return "nvjitlink-ptx";
  }
  return "none";
}

bool is_arch_option(const std::string& option)
{
  return starts_with(option, "-arch") || starts_with(option, "--gpu-architecture") || starts_with(option, "--gpu-name");
}

bool is_lto_option(const std::string& option)
{
  return option == "-dlto" || option == "--dlink-time-opt";
}

CubinPath cubin_path(const Program& program, const Arch& arch)
{
  if (arch.is_virtual()) {
    return CubinPath::none;
  }
  const bool lto = std::any_of(program.options.begin(), program.options.end(), is_lto_option);
  return lto ? CubinPath::nvjitlink_lto : CubinPath::nvrtc;
}

// Math options nvJitLink -lto would have to be told again (it spells them differently); until
// they are translated, -dlto with one of them is refused rather than compiled without it.
bool is_math_option(const std::string& option)
{
  return options::has(option, options::math);
}

void check_options(const Program& program, const Arch& arch)
{
  const bool lto = std::any_of(program.options.begin(), program.options.end(), is_lto_option);
  if (lto && arch.is_virtual()) {
    throw OptionError("option -dlto of " + program.name + " asks for link-time optimization, but " + arch.str() +
                      " is a virtual arch: nothing would be produced; compile for a real arch (sm_XY)");
  }
  for (const auto& option : program.options) {
    if (lto && is_math_option(option)) {
      throw OptionError("option '" + option + "' of " + program.name +
                        " is not passed on to nvJitLink -lto yet: with -dlto it would be ignored; drop one of them");
    }
    if (option == "-optix-ir" || option == "--optix-ir") {
      throw OptionError("option '" + option + "' of " + program.name +
                        " asks NVRTC for OptiX IR instead of PTX and a cubin: kjit neither keeps nor loads it");
    }
    if (is_arch_option(option)) {
      throw OptionError("option '" + option + "' of " + program.name +
                        " sets the arch; pass the arch to compile() or set KJIT_ARCH instead");
    }
    // -maxrregcount, -lineinfo and -G are carried to the driver's JIT when the PTX is loaded
    // (load_options_of); other ptxas options have no place to go.
    if (arch.is_virtual() && is_ptxas_passthrough(option)) {
      throw OptionError("option '" + option + "' of " + program.name + " is for ptxas, but " + arch.str() +
                        " is a virtual arch: no cubin is made and the driver's JIT can't be given it, so it would "
                        "have no effect; compile for a real arch (sm_XY) or drop the option");
    }
  }
}

std::vector<std::string> linker_options(const std::vector<std::string>& program_options, const Arch& arch, bool lto)
{
  std::vector<std::string> out{"-arch=" + arch.real_name()};
  if (lto) {
    out.push_back("-lto");
  }
  for (std::size_t i = 0; i < program_options.size(); ++i) {
    const std::string& option = program_options[i];
    if (options::has(option, options::line_info)) {
      out.push_back("-lineinfo");
    } else if (options::has(option, options::device_debug)) {
      out.push_back("-g");
    } else if (is_maxrregcount(option)) {
      out.push_back("-maxrregcount=" + value_of(program_options, i));
    } else if (is_ptxas_passthrough(option)) {
      out.push_back("-Xptxas=" + value_of(program_options, i));
    }
  }
  return out;
}

} // namespace kjit::rtc
