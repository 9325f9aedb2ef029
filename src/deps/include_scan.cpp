// A small lexer for preprocessor lines: enough to find includes, not a preprocessor.
#include "deps/include_scan.hpp"

#include <cctype>

namespace kjit::deps {

namespace {

// Removes comments and joins continued lines, keeping line numbers (one '\n' per original line).
std::string strip_comments(const std::string& text)
{
  std::string out;
  out.reserve(text.size());
  std::size_t joined = 0;  // line continuations since the last newline
  const auto newline = [&] {
    out += '\n';
    out.append(joined, '\n');
    joined = 0;
  };
  enum { code, line_comment, block_comment, string, character } state = code;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    const char next = i + 1 < text.size() ? text[i + 1] : '\0';
    if (ch == '\\' && next == '\n') {  // continuation: join, keep the line count
      ++i;
      ++joined;
      continue;
    }
    if (ch == '\n') {
      state = state == block_comment ? block_comment : code;
      newline();
      continue;
    }
    switch (state) {
    case code:
      if (ch == '/' && next == '/') {
        state = line_comment;
        ++i;
      } else if (ch == '/' && next == '*') {
        state = block_comment;
        ++i;
        out += ' ';
      } else {
        if (ch == '"') {
          state = string;
        } else if (ch == '\'') {
          state = character;
        }
        out += ch;
      }
      break;
    case line_comment:
      break;
    case block_comment:
      if (ch == '*' && next == '/') {
        state = code;
        ++i;
      }
      break;
    case string:
    case character:
      out += ch;
      if (ch == '\\' && next != '\0' && next != '\n') {
        out += next;
        ++i;
      } else if ((state == string && ch == '"') || (state == character && ch == '\'')) {
        state = code;
      }
      break;
    }
  }
  return out;
}

void skip_space(const std::string& line, std::size_t& at)
{
  while (at < line.size() && (line[at] == ' ' || line[at] == '\t')) {
    ++at;
  }
}

std::string identifier(const std::string& line, std::size_t& at)
{
  const std::size_t start = at;
  while (at < line.size() && (std::isalnum(static_cast<unsigned char>(line[at])) || line[at] == '_')) {
    ++at;
  }
  return line.substr(start, at - start);
}

// Parses `"name"` or `<name>` at `at`; false if neither.
bool header_name(const std::string& text, std::size_t at, std::string& name, bool& quoted)
{
  if (at >= text.size() || (text[at] != '"' && text[at] != '<')) {
    return false;
  }
  quoted = text[at] == '"';
  const auto end = text.find(quoted ? '"' : '>', at + 1);
  if (end == std::string::npos) {
    return false;
  }
  name = text.substr(at + 1, end - at - 1);
  return !name.empty();
}

} // namespace

std::map<std::string, std::string> defines_from_options(const std::vector<std::string>& options)
{
  std::map<std::string, std::string> defines;
  for (const auto& option : options) {
    if (option.rfind("-D", 0) == 0) {
      const auto equals = option.find('=');
      if (equals != std::string::npos) {
        defines[option.substr(2, equals - 2)] = option.substr(equals + 1);
      }
    }
  }
  return defines;
}

std::vector<IncludeDirective> scan_includes(const std::string& text, const std::map<std::string, std::string>& defines)
{
  std::map<std::string, std::string> macros = defines;
  std::vector<IncludeDirective> found;
  const std::string clean = strip_comments(text);
  int depth = 0;
  int line_number = 0;
  std::size_t start = 0;
  while (start <= clean.size()) {
    auto end = clean.find('\n', start);
    if (end == std::string::npos) {
      end = clean.size();
    }
    const std::string line = clean.substr(start, end - start);
    start = end + 1;
    ++line_number;

    for (auto probe = line.find("__has_include"); probe != std::string::npos;
         probe = line.find("__has_include", probe + 1)) {
      std::size_t at = line.find('(', probe);
      if (at != std::string::npos) {
        ++at;
        skip_space(line, at);
        IncludeDirective directive;
        if (header_name(line, at, directive.name, directive.quoted)) {
          directive.conditional = true;
          directive.line = line_number;
          found.push_back(directive);
        }
      }
    }
    std::size_t at = 0;
    skip_space(line, at);
    if (at >= line.size() || line[at] != '#') {
      continue;
    }
    ++at;
    skip_space(line, at);
    const std::string directive_name = identifier(line, at);
    skip_space(line, at);
    if (directive_name == "if" || directive_name == "ifdef" || directive_name == "ifndef") {
      ++depth;
    } else if (directive_name == "endif") {
      depth = depth > 0 ? depth - 1 : 0;
    } else if (directive_name == "define") {
      const std::string macro = identifier(line, at);
      if (at < line.size() && line[at] != '(') {  // object-like
        skip_space(line, at);
        std::string value = line.substr(at);
        while (!value.empty() && std::isspace(static_cast<unsigned char>(value.back()))) {
          value.pop_back();
        }
        macros[macro] = value;
      }
    } else if (directive_name == "include" || directive_name == "include_next") {
      IncludeDirective directive;
      directive.conditional = depth > 0;
      directive.line = line_number;
      if (header_name(line, at, directive.name, directive.quoted)) {
        found.push_back(directive);
      } else {
        const std::string macro = identifier(line, at);
        const auto value = macros.find(macro);
        if (!macro.empty() && value != macros.end() && header_name(value->second, 0, directive.name, directive.quoted)) {
          found.push_back(directive);
        }
      }
    }
  }
  return found;
}

} // namespace kjit::deps
