// Tuning spaces: validation, the cartesian product, pattern expansion and the hashed script text.
#include "script/space.hpp"

#include "util/hash.hpp"

#include <set>
#include <tuple>

namespace kjit::script {

namespace {

bool is_identifier(const std::string& name)
{
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) {
    return false;
  }
  for (const char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) {
      return false;
    }
  }
  return true;
}

void check_names(const std::vector<std::string>& names, const char* what)
{
  std::set<std::string> seen;
  for (const auto& name : names) {
    if (!is_identifier(name)) {
      throw ScriptError(std::string(what) + " '" + name + "' is not a C identifier");
    }
    if (!seen.insert(name).second) {
      throw ScriptError(std::string(what) + " '" + name + "' is given twice");
    }
  }
}

// The "{NAME}" placeholders of a pattern (its braces are checked by expand()).
std::set<std::string> pattern_names(const std::string& pattern)
{
  std::set<std::string> names;
  for (auto open = pattern.find('{'); open != std::string::npos; open = pattern.find('{', open + 1)) {
    const auto close = pattern.find('}', open);
    if (close == std::string::npos) {
      break;
    }
    names.insert(pattern.substr(open + 1, close - open - 1));
  }
  return names;
}

} // namespace

void check(const Script& script)
{
  if (script.space.empty()) {
    throw ScriptError("script '" + script.name + "': the tuning space is empty (give at least one parameter)");
  }
  std::vector<std::string> names;
  for (const auto& parameter : script.space) {
    names.push_back(parameter.name);
    if (parameter.values.empty()) {
      throw ScriptError("tuning parameter '" + parameter.name + "' has no values");
    }
    for (const auto& value : parameter.values) {
      for (const char c : value) {
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f || c == ',') {
          throw ScriptError("tuning parameter '" + parameter.name + "': a value holds a control character or ','");
        }
      }
      if (value.empty()) {
        throw ScriptError("tuning parameter '" + parameter.name + "' has an empty value");
      }
    }
    std::set<std::string> seen;
    for (const auto& value : parameter.values) {
      if (!seen.insert(value).second) {
        throw ScriptError("tuning parameter '" + parameter.name + "' has the value '" + value +
                          "' twice (two identical schedules)");
      }
    }
  }
  check_names(names, "tuning parameter");
  // Counted, never built here: 10 values of 8 parameters would be 10^8 schedules in memory.
  std::size_t count = 1;
  for (const auto& parameter : script.space) {
    if (parameter.values.size() > k_max_schedules / count) {
      throw ScriptError("script '" + script.name + "': the tuning space has more than " +
                        std::to_string(k_max_schedules) + " schedules (the most a script may have)");
    }
    count *= parameter.values.size();
  }
  // The hashed text keeps each of these on one line (script_text()): a newline would write another
  // line, so two different scripts could hash alike (a header named "x.h\nheader: <sha> y.h" as the
  // two headers x.h and y.h). NVRTC takes neither an option nor a name expression with one.
  auto one_line = [&](const std::string& text, const std::string& what) {
    if (text.find('\n') != std::string::npos) {
      throw ScriptError("script '" + script.name + "': " + what + " holds a newline");
    }
  };
  for (const auto& [header, content] : script.headers) {
    one_line(header, "a header name");
  }
  for (const auto& option : script.options) {
    one_line(option, "an option");
  }
  one_line(script.name_expression, "the name-expression pattern");
  if (script.size_names.empty()) {
    throw ScriptError("script '" + script.name + "' has no size names (dispatch needs at least one)");
  }
  check_names(script.size_names, "size name");
  // Expanding with the first values checks every brace and name of the pattern.
  Values first;
  for (const auto& parameter : script.space) {
    first.emplace_back(parameter.name, parameter.values.front());
  }
  std::ignore = expand(script.name_expression, first);
  if (!script.name_expression.empty()) {
    // A parameter with several values that the pattern does not name gives identical schedules.
    const std::set<std::string> named = pattern_names(script.name_expression);
    for (const auto& parameter : script.space) {
      if (parameter.values.size() > 1 && named.count(parameter.name) == 0) {
        throw ScriptError("name-expression pattern '" + script.name_expression + "' does not name tuning parameter '" +
                          parameter.name + "' (its schedules would be the same kernel); write {" + parameter.name +
                          "} in the pattern");
      }
    }
  }
}

std::vector<Values> schedules(const std::vector<TuningParameter>& space)
{
  std::vector<Values> out{Values{}};
  for (const auto& parameter : space) {
    std::vector<Values> next;
    for (const auto& partial : out) {
      for (const auto& value : parameter.values) {
        Values values = partial;
        values.emplace_back(parameter.name, value);
        next.push_back(std::move(values));
      }
    }
    out = std::move(next);
  }
  return out;
}

std::string expand(const std::string& pattern, const Values& values)
{
  std::string out;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '}') {
      throw ScriptError("name-expression pattern '" + pattern + "': '}' without '{'");
    }
    if (pattern[i] != '{') {
      out += pattern[i];
      continue;
    }
    const auto close = pattern.find('}', i);
    if (close == std::string::npos) {
      throw ScriptError("name-expression pattern '" + pattern + "': '{' without '}'");
    }
    const std::string name = pattern.substr(i + 1, close - i - 1);
    bool found = false;
    for (const auto& [parameter, value] : values) {
      if (parameter == name) {
        out += value;
        found = true;
      }
    }
    if (!found) {
      throw ScriptError("name-expression pattern '" + pattern + "' names '" + name +
                        "', which is not a tuning parameter");
    }
    i = close;
  }
  return out;
}

Program schedule_program(const Script& script, const Values& values)
{
  Program program;
  program.name = script.program_name.empty() ? script.name : script.program_name;
  program.source = script.source;
  program.headers = script.headers;
  program.options = script.options;
  if (script.name_expression.empty()) {
    for (const auto& [name, value] : values) {
      program.options.push_back("-D" + name + "=" + value);
    }
  } else {
    program.name_expressions.push_back(expand(script.name_expression, values));
  }
  return program;
}

std::string script_text(const Script& script, const Arch& arch)
{
  // Names may hold anything (newlines too): their lengths keep the text unambiguous.
  std::string text = "kjit script 1\nname: " + std::to_string(script.name.size()) + " " + script.name +
                     "\nprogram-name: " + std::to_string(script.program_name.size()) + " " + script.program_name +
                     "\narch: " + arch.str() + "\nname-expression: " + script.name_expression + "\nsizes:";
  for (const auto& size : script.size_names) {
    text += " " + size;
  }
  text += "\n";
  for (const auto& parameter : script.space) {
    text += "space: " + parameter.name + "=";
    for (std::size_t i = 0; i < parameter.values.size(); ++i) {
      text += (i == 0 ? "" : ",") + parameter.values[i];
    }
    text += "\n";
  }
  for (const auto& option : script.options) {
    text += "option: " + option + "\n";  // check() refuses a newline in an option, header name, pattern
  }
  for (const auto& [name, content] : script.headers) {
    text += "header: " + util::to_hex(util::sha256(content)) + " " + name + "\n";
  }
  text += "source: " + util::to_hex(util::sha256(script.source)) + "\n";
  return text;
}

} // namespace kjit::script
