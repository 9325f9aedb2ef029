// See header_edit.hpp.
#include "deps/header_edit.hpp"

#include "deps/include_scan.hpp"
#include "deps/lex.hpp"
#include "deps/resolver.hpp"
#include "util/text.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <string_view>
#include <tuple>
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

using Directive = std::tuple<std::string, bool, bool, bool, bool, bool, bool>;

std::vector<Directive> directives_of(const std::vector<IncludeDirective>& scanned)
{
  std::vector<Directive> out;
  out.reserve(scanned.size());
  for (const IncludeDirective& d : scanned) {  // (not the line: code above it may grow)
    out.emplace_back(d.name, d.quoted, d.conditional, d.next, d.computed, d.macro, d.probe);
  }
  return out;
}

// Adds to `changed` each macro of `before` and `after` defined differently; false when a
// definition that changed is not plain.
bool compare_definitions(const std::map<std::string, std::set<std::string>>& before,
                         const std::map<std::string, std::set<std::string>>& after, std::set<std::string>& changed)
{
  static const std::set<std::string> none;
  std::set<std::string> names;
  for (const auto& [name, values] : before) {
    names.insert(name);
  }
  for (const auto& [name, values] : after) {
    names.insert(name);
  }
  for (const std::string& name : names) {
    const auto old_values = before.find(name);
    const auto new_values = after.find(name);
    const std::set<std::string>& was = old_values == before.end() ? none : old_values->second;
    const std::set<std::string>& now = new_values == after.end() ? none : new_values->second;
    if (was == now) {
      continue;
    }
    if (!std::all_of(was.begin(), was.end(), plain_definition) || !std::all_of(now.begin(), now.end(), plain_definition)) {
      return false;
    }
    changed.insert(name);
  }
  return true;
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
  if (!(TextAnswers(before) == TextAnswers(after))) {
    return false;
  }
  ScanMacros old_macros;
  ScanMacros new_macros;
  std::string old_storage;
  std::string new_storage;
  const auto old_includes = scan_includes(as_preprocessed(before, old_storage), {}, &old_macros);
  const auto new_includes = scan_includes(as_preprocessed(after, new_storage), {}, &new_macros);
  if (directives_of(old_includes) != directives_of(new_includes) || old_macros.wrappers != new_macros.wrappers) {
    return false;
  }
  std::set<std::string> changed;
  if (!compare_definitions(old_macros.values, new_macros.values, changed) ||
      !compare_definitions(old_macros.functions, new_macros.functions, changed)) {
    return false;
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
