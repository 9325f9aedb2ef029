// Typed compile options rendered to NVRTC's option list, and Program's named construction.
#include <kjit/error.hpp>
#include <kjit/program.hpp>

#include <cctype>

namespace kjit {

namespace {

bool is_identifier(const std::string& name)
{
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) {
    return false;
  }
  for (const char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') {
      return false;
    }
  }
  return true;
}

bool is_space(char ch)
{
  return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\v' || ch == '\f' || ch == '\r';
}

// A folder or header name no option can give NVRTC: it trims white space off the end of every
// option, and of a value given apart (option_spelling.hpp).
void check_name(const std::string& name, const char* field, const char* what)
{
  if (name.empty()) {
    throw OptionError(std::string("CompileOptions::") + field + ": an empty " + what);
  }
  if (is_space(name.back())) {
    throw OptionError(std::string("CompileOptions::") + field + ": the " + what + " '" + name +
                      "' ends in white space, which NVRTC trims off every option");
  }
}

const char* boolean(bool value)
{
  return value ? "true" : "false";
}

} // namespace

std::vector<std::string> CompileOptions::render() const
{
  std::vector<std::string> out;
  if (!standard.empty()) {
    out.push_back("--std=" + standard);
  }
  for (const auto& [name, value] : defines) {
    if (!is_identifier(name)) {
      throw OptionError("CompileOptions::defines: '" + name + "' is not a macro name");
    }
    out.push_back("-D" + name + (value.empty() ? "" : "=" + value));
  }
  for (const std::string& name : undefines) {
    if (!is_identifier(name)) {
      throw OptionError("CompileOptions::undefines: '" + name + "' is not a macro name");
    }
    out.push_back("-U" + name);
  }
  for (const std::string& folder : include_dirs) {
    check_name(folder, "include_dirs", "folder");
    // NVRTC reads "-I=inc" as the folder inc and "-I inc" as "-I" "inc": a folder that starts
    // with '=' or white space is given in the long form, which takes the value as it is.
    out.push_back((folder.front() == '=' || is_space(folder.front()) ? "--include-path=" : "-I") + folder);
  }
  for (const std::string& header : pre_includes) {
    check_name(header, "pre_includes", "header name");
    out.push_back("--pre-include=" + header);
  }
  if (fast_math) {
    out.push_back("--use_fast_math");
  }
  const std::pair<const char*, const std::optional<bool>*> flags[] = {
    {"--ftz=", &ftz}, {"--prec-div=", &prec_div}, {"--prec-sqrt=", &prec_sqrt}, {"--fmad=", &fmad}};
  for (const auto& [option, value] : flags) {
    if (value->has_value()) {
      out.push_back(option + std::string(boolean(**value)));
    }
  }
  if (max_registers < 0) {
    throw OptionError("CompileOptions::max_registers: " + std::to_string(max_registers) + " is negative");
  }
  if (max_registers > 0) {
    out.push_back("--maxrregcount=" + std::to_string(max_registers));
  }
  if (line_info) {
    out.push_back("-lineinfo");
  }
  if (debug) {
    out.push_back("-G");
  }
  out.insert(out.end(), extra.begin(), extra.end());
  return out;
}

Program Program::from_source(std::string name, std::string source)
{
  Program program;
  program.name = std::move(name);
  program.source = std::move(source);
  return program;
}

Program Program::from_file(const std::string& path)
{
  return program_from_file(path);
}

Program& Program::option(std::string option)
{
  options.push_back(std::move(option));
  return *this;
}

Program& Program::with(const CompileOptions& typed)
{
  for (std::string& option : typed.render()) {
    options.push_back(std::move(option));
  }
  return *this;
}

Program& Program::header(std::string name, std::string content)
{
  headers[std::move(name)] = std::move(content);
  return *this;
}

Program& Program::name_expression(std::string expression)
{
  name_expressions.push_back(std::move(expression));
  return *this;
}

} // namespace kjit
