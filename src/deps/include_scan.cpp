// A small lexer for preprocessor lines: enough to find includes, not a preprocessor.
#include "deps/include_scan.hpp"

#include <cctype>

namespace kjit::deps {

namespace {

bool identifier_char(char ch)
{
  return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_';
}

// At text[i] == '"': whether a raw-string prefix ("R", "u8R", "LR", …) stands before it.
bool raw_string_start(const std::string& text, std::size_t i)
{
  if (i == 0 || text[i - 1] != 'R') {
    return false;
  }
  std::size_t start = i - 1;
  while (start > 0 && identifier_char(text[start - 1])) {
    --start;
  }
  const std::string prefix = text.substr(start, i - start);
  return prefix == "R" || prefix == "u8R" || prefix == "uR" || prefix == "UR" || prefix == "LR";
}

// Removes comments and the contents of raw strings (a "#include" at the start of a raw string's
// line is not a directive) and joins continued lines, keeping line numbers (one '\n' per
// original line). Digit separators (1'000) do not open a character literal; digraphs (%:) are
// left for the line parser.
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
    if (ch == '\\' && (next == '\n' || (next == '\r' && i + 2 < text.size() && text[i + 2] == '\n'))) {
      i += next == '\r' ? 2 : 1;  // continuation: join, keep the line count
      ++joined;
      continue;
    }
    if (ch == '\n' && state == block_comment) {
      ++joined;  // a comment is one space: a directive goes on after one that spans lines
      continue;
    }
    if (ch == '\n') {
      state = code;
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
      } else if (ch == '"' && raw_string_start(text, i)) {
        // R"delim( … )delim": no escapes, no splices, may span lines.
        const auto open = text.find('(', i + 1);
        const std::string delimiter = open == std::string::npos ? "" : text.substr(i + 1, open - i - 1);
        const auto close = open == std::string::npos ? std::string::npos : text.find(")" + delimiter + "\"", open);
        const std::size_t end = close == std::string::npos ? text.size() : close + delimiter.size() + 2;
        out += "\"\"";
        for (std::size_t j = i; j < end; ++j) {
          if (text[j] == '\n') {
            out += '\n';
          }
        }
        i = end - 1;
      } else if (std::isdigit(static_cast<unsigned char>(ch)) && (i == 0 || !identifier_char(text[i - 1]))) {
        // A pp-number, with its digit separators: 1'000, 0x1'F, 1e+5.
        out += ch;
        while (i + 1 < text.size()) {
          const char c = text[i + 1];
          const char prev = text[i];
          if (identifier_char(c) || c == '.' ||
              ((c == '+' || c == '-') && (prev == 'e' || prev == 'E' || prev == 'p' || prev == 'P')) ||
              (c == '\'' && i + 2 < text.size() && identifier_char(text[i + 2]))) {
            out += c;
            ++i;
          } else {
            break;
          }
        }
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

// Horizontal white space of a directive line: C++ allows form feed and vertical tab there too.
void skip_space(const std::string& line, std::size_t& at)
{
  while (at < line.size() && (line[at] == ' ' || line[at] == '\t' || line[at] == '\f' || line[at] == '\v')) {
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
  // Every spelling NVRTC takes: -DNAME=V, -D NAME=V, --define-macro=NAME=V, --define-macro NAME=V;
  // NAME alone is NAME=1. The last definition of a name wins, as in NVRTC.
  std::map<std::string, std::string> defines;
  for (std::size_t i = 0; i < options.size(); ++i) {
    const std::string& option = options[i];
    std::string define;
    if ((option == "-D" || option == "--define-macro") && i + 1 < options.size()) {
      define = options[++i];
    } else if (option.rfind("--define-macro=", 0) == 0) {
      define = option.substr(15);
    } else if (option.rfind("-D", 0) == 0 && option.size() > 2) {
      define = option.substr(2);
    } else if ((option == "-U" || option == "--undefine-macro" || option == "-I" || option == "--include-path" ||
                option == "-include" || option == "--pre-include") && i + 1 < options.size()) {
      ++i;  // an option's value, not an option
      continue;
    } else {
      continue;
    }
    const auto equals = define.find('=');
    if (equals == std::string::npos) {
      defines[define] = "1";
    } else {
      defines[define.substr(0, equals)] = define.substr(equals + 1);
    }
  }
  return defines;
}

namespace {

// Whether `line` has the identifier `word` at `at` (not inside a longer identifier).
bool word_at(const std::string& line, std::size_t at, const std::string& word)
{
  return line.compare(at, word.size(), word) == 0 && (at == 0 || !identifier_char(line[at - 1])) &&
         (at + word.size() >= line.size() || !identifier_char(line[at + word.size()]));
}

// The parameter names of the function-like macro whose "(" is at `at`.
std::set<std::string> parameters(const std::string& line, std::size_t at)
{
  std::set<std::string> out;
  for (++at; at < line.size() && line[at] != ')';) {
    skip_space(line, at);
    const std::string name = identifier(line, at);
    if (name.empty()) {
      ++at;
    } else {
      out.insert(name);
    }
  }
  return out;
}

// The probes of one line: __has_include(…), __has_include_next(…) and calls of known wrappers.
// In a #define of a function-like macro, a probe of one of its parameters makes it a wrapper.
void probes(const std::string& line, int line_number, const std::set<std::string>& params, const std::string& defining,
            ScanMacros* shared, std::vector<IncludeDirective>& found)
{
  std::vector<std::string> words{"__has_include", "__has_include_next"};
  if (shared != nullptr) {
    words.insert(words.end(), shared->wrappers.begin(), shared->wrappers.end());
  }
  std::vector<std::string> new_wrappers;
  for (const std::string& word : words) {
    for (auto at = line.find(word); at != std::string::npos; at = line.find(word, at + 1)) {
      if (!word_at(line, at, word) || word == defining) {
        continue;
      }
      std::size_t open = at + word.size();
      skip_space(line, open);
      if (open >= line.size() || line[open] != '(') {
        continue;  // "defined(__has_include)", "#ifdef __has_include"
      }
      std::size_t operand = open + 1;
      skip_space(line, operand);
      IncludeDirective directive;
      directive.conditional = true;
      directive.probe = true;
      directive.line = line_number;
      if (header_name(line, operand, directive.name, directive.quoted)) {
        found.push_back(directive);
        continue;
      }
      std::size_t end = operand;
      const std::string name = identifier(line, end);
      skip_space(line, end);
      if (!name.empty() && params.count(name) != 0) {
        new_wrappers.push_back(defining);  // #define W(x) __has_include(x)
        continue;
      }
      directive.computed = true;
      directive.name = !name.empty() && end < line.size() && line[end] == ')' ? name : line.substr(operand);
      found.push_back(directive);
    }
  }
  if (shared != nullptr) {
    shared->wrappers.insert(new_wrappers.begin(), new_wrappers.end());
  }
}

} // namespace

std::vector<IncludeDirective> scan_includes(const std::string& text, const std::map<std::string, std::string>& defines,
                                            ScanMacros* shared)
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

    std::size_t at = 0;
    skip_space(line, at);
    bool directive_line = true;
    if (at < line.size() && line[at] == '#') {
      ++at;
    } else if (line.compare(at, 2, "%:") == 0) {  // digraph
      at += 2;
    } else {
      directive_line = false;
    }
    std::string directive_name;
    if (directive_line) {
      skip_space(line, at);
      directive_name = identifier(line, at);
      skip_space(line, at);
    }
    if (directive_name == "define") {
      std::size_t after = at;
      const std::string macro = identifier(line, after);
      const bool function_like = after < line.size() && line[after] == '(';
      probes(line, line_number, function_like ? parameters(line, after) : std::set<std::string>{}, macro, shared, found);
    } else if (line.find("__has_include") != std::string::npos || (shared != nullptr && !shared->wrappers.empty())) {
      probes(line, line_number, {}, {}, shared, found);
    }
    if (!directive_line) {
      continue;
    }
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
        if (shared != nullptr) {
          shared->values[macro].insert(value);
        }
      } else if (at >= line.size() && shared != nullptr) {
        shared->values[macro].insert("");
      } else if (shared != nullptr) {  // function-like: its body, for OpenEnds::ask_call()
        const std::size_t close = line.find(')', at);
        std::string body = close == std::string::npos ? std::string() : line.substr(close + 1);
        const std::size_t first = body.find_first_not_of(" \t");
        body = first == std::string::npos ? std::string() : body.substr(first, body.find_last_not_of(" \t\r") + 1 - first);
        shared->functions[macro].insert(body);
      }
    } else if (directive_name == "include" || directive_name == "include_next") {
      IncludeDirective directive;
      directive.next = directive_name == "include_next";
      directive.conditional = depth > 0;
      directive.line = line_number;
      if (header_name(line, at, directive.name, directive.quoted)) {
        found.push_back(directive);
      } else {
        const std::string macro = identifier(line, at);
        const auto value = macros.find(macro);
        // A macro's "name" is followed as written; its <name> is not: the compiler expands the
        // macros among its tokens (<ROOT/x.h> with ROOT /abs is the absolute /abs/x.h, which NVRTC
        // opens on disk itself), so the compiler's answer decides, as for any computed include.
        if (!macro.empty() && value != macros.end() && header_name(value->second, 0, directive.name, directive.quoted) &&
            directive.quoted) {
          directive.macro = true;
          found.push_back(directive);
        } else {
          // Computed beyond what this scanner follows: the compiler's answer decides (kjit adds
          // the file NVRTC asks for and compiles again).
          directive.computed = true;
          directive.name = line.substr(at);
          found.push_back(directive);
        }
      }
    }
  }
  return found;
}

namespace {

bool word_char(char ch)
{
  return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_';
}

// Past the line splices at `at` ("\\\n", "\\\r\n").
std::size_t past_splices(const std::string& text, std::size_t at)
{
  for (;;) {
    if (text.compare(at, 2, "\\\n") == 0) {
      at += 2;
    } else if (text.compare(at, 3, "\\\r\n") == 0) {
      at += 3;
    } else {
      return at;
    }
  }
}

// '/' at `at` that may start an absolute path: followed, past line splices, by a name's character
// or '.' ("/usr", "/.."), or where `line_end_counts`, by the end of its line (a macro body ending in
// '/', which the tokens after the macro's use continue); not "//", "/*", "/=", nor a lone '/'
// handed to a macro as an operator, as CCCL does.
bool slash_token(const std::string& text, std::size_t at, bool line_end_counts = false)
{
  if (at >= text.size() || text[at] != '/') {
    return false;
  }
  std::size_t next = past_splices(text, at + 1);
  if (next < text.size() && (word_char(text[next]) || text[next] == '.')) {
    return true;
  }
  while (line_end_counts && next < text.size() && (text[next] == ' ' || text[next] == '\t' || text[next] == '\r')) {
    next = past_splices(text, next + 1);
  }
  return line_end_counts && (next >= text.size() || text[next] == '\n');
}

// Past the blanks at `at` of a directive line: spaces, tabs, /* comments */ and line splices
// ("# /**/ define" is a #define).
std::size_t skip_blank(const std::string& text, std::size_t at)
{
  while (at < text.size()) {
    if (text[at] == ' ' || text[at] == '\t') {
      ++at;
    } else if (text.compare(at, 2, "/*") == 0) {
      const std::size_t end = text.find("*/", at + 2);
      at = end == std::string::npos ? text.size() : end + 2;
    } else if (text.compare(at, 2, "\\\n") == 0) {
      at += 2;
    } else if (text.compare(at, 3, "\\\r\n") == 0) {
      at += 3;
    } else {
      break;
    }
  }
  return at;
}

// The length of the directive introducer at `at`: 1 for '#', 2 for its digraph "%:", else 0.
std::size_t introducer_at(const std::string& text, std::size_t at)
{
  return text[at] == '#' ? 1 : text.compare(at, 2, "%:") == 0 ? 2 : 0;
}

// Whether the line at `at` is "#define NAME body" or "#define NAME(params) body" with a body
// starting with '/'.
bool define_body_starts_with_slash(const std::string& text, std::size_t at)
{
  const auto skip = [&](std::size_t i) { return skip_blank(text, i); };
  at = skip(at);
  const std::size_t introducer = at < text.size() ? introducer_at(text, at) : 0;
  if (introducer == 0) {
    return false;
  }
  at = skip(at + introducer);
  if (text.compare(at, 6, "define") != 0) {
    return false;
  }
  at = skip(at + 6);
  while (at < text.size() && word_char(text[at])) {
    ++at;
  }
  if (at < text.size() && text[at] == '(') {
    at = text.find(')', at);
    at = at == std::string::npos ? text.size() : at + 1;
  }
  return slash_token(text, skip(at), true);
}

// Whether the directive whose name starts at `at` (just after its '#') is #define, #include or
// #include_next: the only lines whose text an #include's macro expansion may take. `next` is
// where to go on: after an #include's <header-name> (a name, never formed), else `at`.
bool expanded_directive(const std::string& text, std::size_t at, std::size_t& next)
{
  next = at;
  const auto skip = [&](std::size_t i) { return skip_blank(text, i); };
  at = skip(at);
  if (text.compare(at, 6, "define") == 0) {
    return true;
  }
  if (text.compare(at, 7, "include") != 0) {
    return false;
  }
  at += 7;
  while (at < text.size() && word_char(text[at])) {
    ++at;  // include_next
  }
  at = skip(at);
  const std::size_t close = at < text.size() && text[at] == '<' ? text.find_first_of(">\n", at) : std::string::npos;
  next = close != std::string::npos && text[close] == '>' && text[at + 1] != '/' ? close : next;
  return true;
}

// The parameters of the function-like macro a "define NAME(…)" at `at` (just after its '#')
// defines; none for any other line.
std::set<std::string> defined_parameters(const std::string& text, std::size_t at)
{
  at = skip_blank(text, at);
  if (text.compare(at, 6, "define") != 0) {
    return {};
  }
  at = skip_blank(text, at + 6);
  while (at < text.size() && word_char(text[at])) {
    ++at;
  }
  if (at >= text.size() || text[at] != '(') {
    return {};
  }
  const std::size_t close = text.find(')', at);
  return parameters(text.substr(at, close == std::string::npos ? std::string::npos : close - at + 1), 0);
}

} // namespace

namespace {

// Past pathological macro graphs (a cycle reached through many names is decided again each time it
// is met): every name may expand to nothing.
constexpr std::size_t k_max_steps = 100000;

// A reserved name no text defines may be NVRTC's own: empty, as far as kjit knows, unless it is one
// NVRTC predefines with a value (a number or a name: never nothing).
bool reserved(const std::string& name)
{
  static const std::set<std::string> k_predefined = {
    "__CUDA_ARCH__", "__CUDACC__", "__CUDACC_RTC__", "__CUDACC_VER_MAJOR__", "__CUDACC_VER_MINOR__",
    "__CUDACC_VER_BUILD__", "__NVCC__", "__cplusplus", "__LINE__", "__COUNTER__", "__FILE__", "__STDC__",
    "__x86_64__", "__LP64__", "__CHAR_BIT__", "__SIZEOF_POINTER__", "__INT_MAX__"};
  return name.size() > 1 && name[0] == '_' && (name[1] == '_' || std::isupper(static_cast<unsigned char>(name[1]))) &&
         k_predefined.count(name) == 0;
}

} // namespace

void OpenEnds::definitions(const std::map<std::string, std::set<std::string>> ScanMacros::*table, const std::string& name,
                           std::vector<const std::set<std::string>*>& out) const
{
  out.clear();
  if (const auto found = (m_macros.*table).find(name); found != (m_macros.*table).end()) {
    out.push_back(&found->second);
  }
  if (m_toolkit && m_toolkit_macros == nullptr) {
    m_toolkit_macros = m_toolkit();
  }
  if (m_toolkit_macros != nullptr) {
    if (const auto found = (m_toolkit_macros->*table).find(name); found != (m_toolkit_macros->*table).end()) {
      out.push_back(&found->second);
    }
  }
}

bool OpenEnds::ask(const std::string& name) const
{
  const bool open = may_end_open(name);
  m_asked[name] = open;
  return open;
}

bool OpenEnds::ask_call(const std::string& name) const
{
  std::vector<const std::set<std::string>*> bodies;
  definitions(&ScanMacros::values, name, bodies);
  bool open = !bodies.empty();  // an object-like macro: it may name a function-like one
  definitions(&ScanMacros::functions, name, bodies);
  for (const std::set<std::string>* set : bodies) {
    for (const std::string& body : *set) {
      // Closed only by a number or a string literal: a last name may be a parameter.
      open = open || value_end(body) != End::closed_literal;
    }
  }
  open = open || (bodies.empty() && reserved(name));
  m_asked[name + "()"] = open;
  return open;
}

OpenEnds::End OpenEnds::value_end(const std::string& value) const
{
  // The last token: a number or string literal, a name (what it ends with decides), or anything else.
  std::size_t end = value.find_last_not_of(" \t\r\n\\");
  if (end == std::string::npos) {
    return End::open;  // empty
  }
  const char last = value[end];
  if (last == '"' || last == '\'') {
    return End::closed_literal;
  }
  if (!word_char(last)) {
    return End::open;  // a punctuator: '<', '(', ',', ')' of a call, a paste…
  }
  std::size_t start = end;
  while (start > 0 && (word_char(value[start - 1]) || value[start - 1] == '.')) {
    --start;
  }
  if (std::isdigit(static_cast<unsigned char>(value[start])) || value[start] == '.') {
    return End::closed_literal;  // a pp-number
  }
  return may_end_open(value.substr(start, end + 1 - start)) ? End::open : End::closed_name;
}

bool OpenEnds::may_end_open(const std::string& name) const
{
  if (auto known = m_known.find(name); known != m_known.end()) {
    if (known->second == 0) {
      ++m_assumed;  // its own expansion reached it again, where it stays itself
      return false;
    }
    return known->second == 1;
  }
  if (++m_steps > k_max_steps) {
    return true;
  }
  std::vector<const std::set<std::string>*> values;
  definitions(&ScanMacros::values, name, values);
  if (values.empty()) {
    m_known[name] = reserved(name) ? 1 : 2;
    return reserved(name);
  }
  m_known[name] = 0;
  const std::size_t assumed = m_assumed;
  bool open = false;
  for (const std::set<std::string>* set : values) {
    for (const std::string& value : *set) {
      open = open || value_end(value) == End::open;
    }
  }
  if (open || m_assumed == assumed) {
    m_known[name] = open ? 1 : 2;
  } else {
    m_known.erase(name);  // "closed" while a name it reached was still being decided: not final
  }
  return open;
}

bool may_form_absolute_name(const std::string& text, const OpenEnds& ends)
{
  char previous = '\n';  // the last character outside comments, strings and white space
  std::size_t previous_at = 0;  // where it is
  bool expanded = false;  // inside a #define or an #include line: text a computed include may expand
  std::set<std::string> parameters_here;  // of the function-like macro this #define line defines
  std::vector<std::string> open_calls;  // the name before each '(' not closed yet ("" for none)
  std::string closed_call;              // the name before the '(' the last ')' closed
  // The name ending at previous_at.
  const auto name_before = [&] {
    std::size_t start = previous_at + 1;
    while (start > 0 && word_char(text[start - 1])) {
      --start;
    }
    return text.substr(start, previous_at + 1 - start);
  };
  // Whether what `name` (or its call) expands to may leave a '/' after it first in a header name.
  const auto may_open = [&](const std::string& name, bool call) {
    if (name.empty()) {
      return call;  // a bare group's ')' ("F()(x)/abs"): what stood before it is not known here
    }
    return !std::isdigit(static_cast<unsigned char>(name[0])) &&
           (parameters_here.count(name) != 0 || name == "__VA_ARGS__" || name == "__VA_OPT__" ||
            (call ? ends.ask_call(name) : ends.ask(name)));
  };
  for (std::size_t at = 0; at < text.size(); ++at) {
    const char ch = text[at];
    // The first character of a line that is not blank ('#': a #define may start there); once per
    // line, not once per leading blank (quadratic in a long run of them).
    if (const std::size_t introducer = previous == '\n' ? introducer_at(text, at) : 0; introducer != 0) {
      if (define_body_starts_with_slash(text, at)) {
        return true;
      }
      std::size_t next = at;
      expanded = expanded_directive(text, at + introducer, next);
      parameters_here = expanded ? defined_parameters(text, at + introducer) : std::set<std::string>{};
      open_calls.clear();
      if (next != at + introducer) {
        at = next;  // an #include <…>'s name: not formed by macros
        previous = '>';
        previous_at = at;
        continue;
      }
    }
    if (ch == '/' && at + 1 < text.size() && (text[at + 1] == '/' || text[at + 1] == '*')) {
      const bool line = text[at + 1] == '/';
      at = line ? text.find('\n', at) : text.find("*/", at + 2);
      if (at == std::string::npos) {
        return false;
      }
      at = line ? at - 1 : at + 1;  // a line comment's newline is seen next
      continue;
    }
    if (ch == '\n') {
      const bool spliced = (at > 0 && text[at - 1] == '\\') || (at > 1 && text[at - 1] == '\r' && text[at - 2] == '\\');
      previous = spliced ? previous : '\n';
      expanded = expanded && spliced;
      continue;
    }
    if (ch == ' ' || ch == '\t' || ch == '\\' || ch == '\r' || ch == '\f' || ch == '\v') {
      continue;
    }
    if (ch == '"' && slash_token(text, past_splices(text, at + 1))) {
      return true;  // a string literal starting with '/'
    }
    if (ch == '"' && raw_string_start(text, at)) {
      const std::size_t open = text.find('(', at);
      const std::string close = ")" + text.substr(at + 1, open == std::string::npos ? 0 : open - at - 1) + "\"";
      const std::size_t end = open == std::string::npos ? std::string::npos : text.find(close, open);
      if (end == std::string::npos) {
        return false;  // unterminated: the compiler refuses it
      }
      at = end + close.size() - 1;
      previous = '"';
      previous_at = at;
      continue;
    }
    // A quote after a name's character opens a literal with a prefix (u8'x', L'x'), except in a
    // number before a digit or letter, where it separates digits (1'000).
    const bool separator = ch == '\'' && word_char(previous) && at + 1 < text.size() && word_char(text[at + 1]) &&
                           std::isdigit(static_cast<unsigned char>(name_before()[0]));
    if (ch == '"' || (ch == '\'' && !separator)) {
      for (at = at + 1; at < text.size() && text[at] != ch && text[at] != '\n'; ++at) {
        at += text[at] == '\\' ? 1 : 0;
      }
      if (at < text.size() && text[at] == '\n') {
        --at;
      }
      previous = ch;
      previous_at = at;
      continue;
    }
    if (expanded && ch == '(') {
      open_calls.push_back(word_char(previous) ? name_before() : std::string());
    } else if (expanded && ch == ')' && !open_calls.empty()) {
      closed_call = open_calls.back();
      open_calls.pop_back();
    }
    if (slash_token(text, at, expanded) && (previous == '(' || previous == ',' || previous == '<')) {
      return true;  // a macro argument, or an angle name, starting with '/'
    }
    if (expanded && slash_token(text, at, true)) {
      const bool pasted = previous == '#' || (previous == ':' && previous_at >= 3 && text.compare(previous_at - 3, 4, "%:%:") == 0);
      if (pasted || (word_char(previous) && may_open(name_before(), false)) ||
          (previous == ')' && may_open(closed_call, true))) {
        return true;  // after what may expand to nothing: "EMPTY/abs", "E()/abs", "x ## /abs"
      }
    }
    previous = ch;
    previous_at = at;
  }
  return false;
}

} // namespace kjit::deps
