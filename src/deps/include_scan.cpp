// A small lexer for preprocessor lines: enough to find includes, not a preprocessor.
#include "deps/include_scan.hpp"

#include "deps/lex.hpp"
#include "deps/resolver.hpp"  // directive_kind
#include "util/text.hpp"

#include <algorithm>
#include <array>
#include <cctype>

#include <string_view>

namespace kjit::deps {

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
std::string without_comments(const std::string& text)
{
  std::string out;
  out.reserve(text.size());
  std::size_t joined = 0;  // line continuations since the last newline
  const auto newline = [&] {
    out += '\n';
    out.append(joined, '\n');
    joined = 0;
  };
  enum State { code, line_comment, block_comment, string, character } state = code;
  // Whether a character changes nothing in a state: a run of such characters is copied (or, in a
  // comment, skipped) whole. Never the first character of a line splice, a newline or what ends
  // the state; in code, no quote, '/', nor a digit (which may start a pp-number).
  static constexpr auto k_inert = [] {
    std::array<std::array<bool, 256>, 5> table{};
    for (int ch = 0; ch < 256; ++ch) {
      const bool any = ch != '\\' && ch != '\n';
      table[code][ch] = any && ch != '/' && ch != '"' && ch != '\'' && (ch < '0' || ch > '9');
      table[line_comment][ch] = any;
      table[block_comment][ch] = any && ch != '*';
      table[string][ch] = any && ch != '"';
      table[character][ch] = any && ch != '\'';
    }
    return table;
  }();
  const auto inert = [](State in, char ch) { return k_inert[in][static_cast<unsigned char>(ch)]; };
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (inert(state, text[i])) {
      std::size_t end = i + 1;
      while (end < text.size() && inert(state, text[end])) {
        ++end;
      }
      if (state == code || state == string || state == character) {
        out.append(text, i, end - i);
      }
      i = end - 1;
      continue;
    }
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

namespace {

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

void skip_space(const std::string& line, std::size_t& at)
{
  while (at < line.size() && (line[at] == ' ' || line[at] == '\t' || line[at] == '\f' || line[at] == '\v')) {
    ++at;
  }
}

std::string identifier(const std::string& line, std::size_t& at)
{
  const std::size_t start = at;
  while (at < line.size() && identifier_char(line[at])) {
    ++at;
  }
  return line.substr(start, at - start);
}

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

namespace {

// Whether `line` has the identifier `word` at `at` (not inside a longer identifier).
bool word_at(const std::string& line, std::size_t at, const std::string& word)
{
  return line.compare(at, word.size(), word) == 0 && (at == 0 || !identifier_char(line[at - 1])) &&
         (at + word.size() >= line.size() || !identifier_char(line[at + word.size()]));
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

std::string trigraphs_replaced(const std::string& text)
{
  if (text.find("??") == std::string::npos) {
    return text;
  }
  static constexpr std::string_view k_trigraphs = "=(/)'<!>-";
  static constexpr std::string_view k_replacements = "#[\\]^{|}~";
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto which = i + 2 < text.size() && text[i] == '?' && text[i + 1] == '?' ? k_trigraphs.find(text[i + 2])
                                                                                   : std::string_view::npos;
    out += which == std::string_view::npos ? text[i] : k_replacements[which];
    i += which == std::string_view::npos ? 0 : 2;
  }
  return out;
}

std::vector<IncludeDirective> scan_includes(const std::string& text, const std::map<std::string, std::string>& defines,
                                            ScanMacros* shared)
{
  std::map<std::string, std::string> macros = defines;
  std::vector<IncludeDirective> found;
  // Trigraphs first (the preprocessor's first phase): a `??/` splice joins lines as `\` does.
  const std::string clean = without_comments(text.find("??") == std::string::npos ? text : trigraphs_replaced(text));
  int depth = 0;
  int line_number = 0;
  std::size_t start = 0;
  std::string line;  // one buffer for every line
  // Whether a line may hold a word of probes(): asked of each line only when the text holds one.
  const auto holds_probe_word = [&](const std::string& in) {
    return util::find_text(in, "__has_include") != std::string::npos ||
           (shared != nullptr && std::any_of(shared->wrappers.begin(), shared->wrappers.end(), [&](const std::string& wrapper) {
              return util::find_text(in, wrapper) != std::string::npos;
            }));
  };
  const bool text_probes = holds_probe_word(clean);
  const auto may_probe = [&] { return text_probes && holds_probe_word(line); };
  while (start <= clean.size()) {
    auto end = clean.find('\n', start);
    if (end == std::string::npos) {
      end = clean.size();
    }
    line.assign(clean, start, end - start);
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
    } else if (may_probe()) {  // probes() finds nothing in a line holding none of its words
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

// The line `line` (1-based) of `text`, with continued lines joined.
std::string line_of(const std::string& text, int line)
{
  std::size_t at = 0;
  for (int i = 1; i < line && at != std::string::npos; ++i) {
    at = text.find('\n', at);
    at = at == std::string::npos ? at : at + 1;
  }
  if (at == std::string::npos) {
    return {};
  }
  std::string out;
  for (; at < text.size() && text[at] != '\n'; ++at) {
    if (text[at] == '\\' && at + 1 < text.size() && text[at + 1] == '\n') {
      ++at;
      continue;
    }
    out += text[at];
  }
  return out;
}

} // namespace

// Which directive is at `line` of `text` (for the compile loop, from NVRTC's log).
IncludeKind directive_kind(const std::string& text, int line)
{
  const std::string directive = line_of(text, line);
  const auto at = directive.find("include");
  if (at == std::string::npos) {
    return IncludeKind::quoted;
  }
  if (directive.compare(at, 12, "include_next") == 0) {
    return IncludeKind::next;
  }
  const auto open = directive.find_first_not_of(" \t", at + 7);
  return open != std::string::npos && directive[open] == '<' ? IncludeKind::angle : IncludeKind::quoted;
}

} // namespace kjit::deps
