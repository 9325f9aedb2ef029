// The table of NVRTC options (nvrtc.h; traits measured with NVRTC 13.0) and the questions asked of it.
#include "options/option_table.hpp"

#include <algorithm>
#include <climits>

namespace kjit::options {

namespace {

constexpr unsigned k_apart = value_apart;
constexpr unsigned k_verbatim = value_apart | value_verbatim;

std::vector<Option> make_table()
{
  std::vector<Option> options{
    {"-Xcudafe", "", k_verbatim | aborts_when_empty},
    {"-Xnvvm", "", k_verbatim | aborts_when_empty},
    {"-Ofc", "--Ofast-compile", k_apart | keyed_long | aborts_when_empty},
    {"-D", "--define-macro", k_verbatim},
    {"-G", "--device-debug", device_debug},
    {"-U", "--undefine-macro", k_verbatim},
    {"-w", "--disable-warnings", keyed_long},
    {"-default-device", "--device-as-default-execution-space", keyed_long},
    {"-dc", "--device-c", keyed_long},
    {"-device-int128", "--device-int128", keyed_long},
    {"-device-stack-protector", "--device-stack-protector", k_apart | keyed_long},
    {"-dw", "--device-w", keyed_long},
    {"-dlto", "--dlink-time-opt", keyed_long},
    {"-dopt", "--dopt", k_apart | keyed_long | aborts_when_empty},
    {"-ewp", "--extensible-whole-program", keyed_long},
    {"-extra-device-vectorization", "--extra-device-vectorization", keyed_long},
    {"-fmad", "--fmad", k_apart | keyed_long | math},
    {"-ftz", "--ftz", k_apart | keyed_long | math},
    {"-lineinfo", "--generate-line-info", line_info},
    {"-arch", "--gpu-architecture", k_apart},
    {"-I", "--include-path", k_verbatim},
    // -split-compile=N starts N threads: NVRTC 13.0 needed 322 MB for 30000, was killed for memory
    // at 65536 and crashed (SIGSEGV) at 2147483647.
    {"-jtd", "--jump-table-density", k_apart | keyed_long | int_value, INT_MAX},
    {"-maxrregcount", "--maxrregcount", k_apart | keyed_long | keyed_joined | max_registers},
    {"-modify-stack-limit", "--modify-stack-limit", k_apart | keyed_long},
    {"-no-source-include", "--no-source-include", keyed_long},
    {"-include", "--pre-include", k_verbatim | keyed_long | keyed_joined},
    {"-prec-div", "--prec-div", k_apart | keyed_long | math},
    {"-prec-sqrt", "--prec-sqrt", k_apart | keyed_long | math},
    {"-Xptxas", "--ptxas-options", k_verbatim | keyed_long | keyed_joined | ptxas_value | aborts_when_empty},
    {"-rdc", "--relocatable-device-code", k_apart | keyed_long},
    {"-restrict", "--restrict", keyed_long},
    {"-split-compile", "--split-compile", k_apart | int_value, 1024},
    {"-use_fast_math", "--use_fast_math", keyed_long | math},
  };
  std::sort(options.begin(), options.end(), [](const Option& a, const Option& b) {
    return a.long_name != b.long_name ? a.long_name < b.long_name : a.short_name < b.short_name;
  });
  return options;
}

} // namespace

const std::vector<Option>& table()
{
  static const std::vector<Option> options = make_table();
  return options;
}

const Option* find(std::string_view name)
{
  if (name.empty()) {
    return nullptr;
  }
  for (const Option& option : table()) {
    if (option.short_name == name || option.long_name == name) {
      return &option;
    }
  }
  return nullptr;
}

const Option* parse(std::string_view option, std::string_view* value)
{
  const std::size_t equals = option.find('=');
  if (const Option* found = find(option.substr(0, equals))) {
    if (equals != std::string_view::npos && (found->traits & value_apart) == 0) {
      return nullptr;  // a flag takes no value: "-G=1" is not -G
    }
    if (value != nullptr) {
      *value = equals == std::string_view::npos ? std::string_view() : option.substr(equals + 1);
    }
    return found;
  }
  // -I, -D and -U take their value joined ("-Iinc", "-DX=1").
  if (option.size() > 2 && option[0] == '-' && (option[1] == 'I' || option[1] == 'D' || option[1] == 'U')) {
    if (value != nullptr) {
      *value = option.substr(2);
    }
    return find(option.substr(0, 2));
  }
  return nullptr;
}

bool takes_value_apart(std::string_view name)
{
  const Option* option = find(name);
  return option != nullptr && (option->traits & value_apart) != 0;
}

bool takes_verbatim_value(std::string_view name)
{
  const Option* option = find(name);
  return option != nullptr && (option->traits & value_verbatim) != 0;
}

bool has(std::string_view option, Trait trait)
{
  const Option* found = parse(option);
  return found != nullptr && (found->traits & trait) != 0;
}

bool any(const std::vector<std::string>& options, Trait trait)
{
  return std::any_of(options.begin(), options.end(), [trait](const std::string& option) { return has(option, trait); });
}

std::string keyed_name(const std::string& option)
{
  // A name given with its value ("-ftz=true") is renamed when it takes a value, a flag ("-w") only
  // when given exactly: "-w=1" stays as written.
  const std::size_t equals = option.find('=');
  const Option* found = find(std::string_view(option).substr(0, equals));
  if (found == nullptr || (found->traits & keyed_long) == 0 || found->short_name != option.substr(0, equals) ||
      ((found->traits & value_apart) != 0) != (equals != std::string::npos)) {
    return option;
  }
  return std::string(found->long_name) + (equals == std::string::npos ? std::string() : option.substr(equals));
}

std::string joined_prefix(std::string_view name)
{
  const Option* found = find(name);
  return found != nullptr && (found->traits & keyed_joined) != 0 ? std::string(found->long_name) + "=" : std::string();
}

std::string file_reading(const std::vector<std::string>& options)
{
  for (const auto& option : options) {
    for (const char* word : {"options-file", "optf", "use-pch", "pch-dir"}) {
      if (option.find(word) != std::string::npos) {
        return "the option '" + option + "' makes the compiler read a file kjit does not hash";
      }
    }
  }
  return {};
}

} // namespace kjit::options
