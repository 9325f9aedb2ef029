// Whether the texts of a program with a computed #include could form an absolute header name, which
// NVRTC would open on disk itself (docs/includes.md, "Computed includes of real libraries").
#include "deps/formed_names.hpp"

#include "deps/lex.hpp"

#include <cctype>

namespace kjit::deps {

namespace {

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
  if (next < text.size() && (identifier_char(text[next]) || text[next] == '.')) {
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
  while (at < text.size() && identifier_char(text[at])) {
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
  while (at < text.size() && identifier_char(text[at])) {
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
  while (at < text.size() && identifier_char(text[at])) {
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
  if (!identifier_char(last)) {
    return End::open;  // a punctuator: '<', '(', ',', ')' of a call, a paste…
  }
  std::size_t start = end;
  while (start > 0 && (identifier_char(value[start - 1]) || value[start - 1] == '.')) {
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
    while (start > 0 && identifier_char(text[start - 1])) {
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
    if (identifier_char(ch)) {
      // A name or number whole: no check below stops inside one (each would only move `previous`).
      while (at + 1 < text.size() && identifier_char(text[at + 1])) {
        ++at;
      }
      previous = text[at];
      previous_at = at;
      continue;
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
    const bool separator = ch == '\'' && identifier_char(previous) && at + 1 < text.size() && identifier_char(text[at + 1]) &&
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
      open_calls.push_back(identifier_char(previous) ? name_before() : std::string());
    } else if (expanded && ch == ')' && !open_calls.empty()) {
      closed_call = open_calls.back();
      open_calls.pop_back();
    }
    if (slash_token(text, at, expanded) && (previous == '(' || previous == ',' || previous == '<')) {
      return true;  // a macro argument, or an angle name, starting with '/'
    }
    if (expanded && slash_token(text, at, true)) {
      const bool pasted = previous == '#' || (previous == ':' && previous_at >= 3 && text.compare(previous_at - 3, 4, "%:%:") == 0);
      if (pasted || (identifier_char(previous) && may_open(name_before(), false)) ||
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
