// See header_edit.hpp.
#include "deps/header_edit.hpp"

#include "deps/include_scan.hpp"
#include "deps/lex.hpp"
#include "deps/resolver.hpp"
#include "util/text.hpp"

#include <algorithm>
#include <array>
#include <string_view>
#include <vector>

namespace kjit::deps {

namespace {

// The words a changed definition must not hold: what forms an include or a probe, says `once`, or
// puts a file's name or the time into a binary.
constexpr std::array<std::string_view, 16> k_unplain_words = {
  "include",  "include_next", "__has_include", "__has_include_next", "_Pragma",       "pragma",
  "once",     "__FILE__",     "__FILE_NAME__", "__BASE_FILE__",      "__builtin_FILE", "source_location",
  "assert",   "__TIME__",     "__DATE__",      "__TIMESTAMP__",
};

bool plain_definition(const std::string& value)
{
  if (value.find_first_of("\"'<>/\\#") != std::string::npos || value.find("%:") != std::string::npos) {
    return false;  // a header name, a string, a path, a paste or a stringizing (`%:` is `#`)
  }
  return std::none_of(k_unplain_words.begin(), k_unplain_words.end(),
                      [&](std::string_view word) { return has_word(value, word); });
}

// A directive line of a text as compared: `%:` read as `#`, each run of white space one space; for
// a #define, the name with its parameter list (`defines`) and the body.
struct DirectiveLine {
  std::string text;
  std::string defines;
  std::string name;
  std::string body;
};

std::vector<DirectiveLine> directive_lines(const std::string& raw)
{
  std::string storage;
  const std::string text = without_comments(as_preprocessed(raw, storage));
  std::vector<DirectiveLine> lines;
  for (std::size_t start = 0; start < text.size();) {
    std::size_t end = text.find('\n', start);
    end = end == std::string::npos ? text.size() : end;
    const std::string line = text.substr(start, end - start);
    start = end + 1;
    std::size_t i = 0;
    skip_space(line, i);
    if (i < line.size() && line[i] == '#') {
      i += 1;
    } else if (line.compare(i, 2, "%:") == 0) {
      i += 2;
    } else {
      continue;  // a line of code
    }
    DirectiveLine directive{"#", {}, {}, {}};
    bool blank = false;
    for (; i < line.size(); ++i) {
      const char ch = line[i];
      if (ch == ' ' || ch == '\t' || ch == '\f' || ch == '\v' || ch == '\r') {
        blank = true;
        continue;
      }
      if (blank && directive.text.size() > 1) {
        directive.text += ' ';
      }
      blank = false;
      directive.text += ch;
    }
    const std::string& normal = directive.text;
    std::size_t at = 1;
    skip_space(normal, at);
    if (identifier(normal, at) == "define") {
      skip_space(normal, at);
      const std::size_t name_start = at;
      directive.name = identifier(normal, at);
      if (!directive.name.empty() && at < normal.size() && normal[at] == '(') {
        const std::size_t close = normal.find(')', at);
        at = close == std::string::npos ? normal.size() : close + 1;
      }
      directive.defines = directive.name.empty() ? std::string() : normal.substr(name_start, at - name_start);
      directive.body = normal.substr(at);
    }
    lines.push_back(std::move(directive));
  }
  return lines;
}

// What the resolver asks of one text, besides its includes and macros.
struct TextAnswers {
  bool names_files = false;
  bool names_program = false;
  bool uses_time = false;
  bool defines_once = false;
  bool once = false;
  bool pastes = false;
  bool has_pieces = false;
  std::set<std::string> formed;

  explicit TextAnswers(const std::string& text)
    : names_files(text_names_files(text)), names_program(text_names_program(text)), uses_time(text_uses_time(text)),
      defines_once(text_may_define_once(text)), once(must_be_one_copy(text))
  {
    PastedWords words;
    words.read(text);
    pastes = words.pastes();
    has_pieces = words.has_pieces();
    formed = words.formed();
  }

  bool operator==(const TextAnswers& other) const
  {
    return names_files == other.names_files && names_program == other.names_program && uses_time == other.uses_time &&
           defines_once == other.defines_once && once == other.once && pastes == other.pastes &&
           has_pieces == other.has_pieces && formed == other.formed;
  }
};

} // namespace

bool edit_keeps_closure(const std::string& before, const std::string& after, std::set<std::string>& changed_macros)
{
  // A trigraph: `??/` may splice a line into a comment for kjit and not for NVRTC (C++17 has none;
  // a prediction compiles such a text from the disk, uncached: a review's reproducer).
  if (before.find("??") != std::string::npos || after.find("??") != std::string::npos ||
      !(TextAnswers(before) == TextAnswers(after))) {
    return false;
  }
  // The preprocessor's lines as they were, but for the bodies of #defines: every include, probe
  // and condition the same (a wrapper of __has_include defined in another header, called here,
  // is a condition like any other: found by a review).
  const std::vector<DirectiveLine> was = directive_lines(before);
  const std::vector<DirectiveLine> now = directive_lines(after);
  if (was.size() != now.size()) {
    return false;
  }
  std::set<std::string> changed;
  for (std::size_t i = 0; i < was.size(); ++i) {
    if (was[i].text == now[i].text) {
      continue;
    }
    if (was[i].defines.empty() || was[i].defines != now[i].defines || !plain_definition(was[i].body) ||
        !plain_definition(now[i].body)) {
      return false;
    }
    changed.insert(now[i].name);
  }
  changed_macros.insert(changed.begin(), changed.end());
  return true;
}

bool names_in_a_directive(const std::string& raw, const std::string& macro)
{
  std::string storage;
  const std::string& preprocessed = as_preprocessed(raw, storage);
  if (!has_word(preprocessed, macro)) {
    return false;  // most texts: one search
  }
  const std::string text = without_comments(preprocessed);
  for (std::size_t at = util::find_text(text, macro); at != std::string::npos;
       at = util::find_text(text, macro, at + macro.size())) {
    if ((at > 0 && identifier_char(text[at - 1])) ||
        (at + macro.size() < text.size() && identifier_char(text[at + macro.size()]))) {
      continue;  // inside a longer name
    }
    const std::size_t line_start = text.rfind('\n', at);
    std::size_t i = line_start == std::string::npos ? 0 : line_start + 1;
    skip_space(text, i);
    if (i >= text.size() || (text[i] != '#' && text.compare(i, 2, "%:") != 0)) {
      continue;  // a line of code
    }
    i += text[i] == '#' ? 1 : 2;
    skip_space(text, i);
    const std::string directive = identifier(text, i);
    skip_space(text, i);
    const bool defines_it = directive == "define" && i == at;
    if (!defines_it && directive != "undef" && directive != "ifdef" && directive != "ifndef") {
      return true;
    }
  }
  return false;
}

} // namespace kjit::deps
