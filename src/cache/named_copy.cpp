// Naming a header's copy by #line (named_copy.hpp).
#include "cache/named_copy.hpp"

#include "deps/include_scan.hpp"
#include "deps/lex.hpp"

#include <algorithm>
#include <optional>
#include <string_view>
#include <vector>

namespace kjit::cache {

namespace {

// Where a #line can go in `text` after its include guard: the offset just past the line that opens
// it, and the number of the line that follows there.
struct Place {
  std::size_t offset = 0;
  int line = 1;
};

// Past the blanks, newlines and comments at `at` (counting lines). False at the end of the text,
// or on what this reader does not follow: a line splice, a trigraph, an unterminated comment.
bool skip_blank(const std::string& text, std::size_t& at, int& line)
{
  while (at < text.size()) {
    const char ch = text[at];
    if (ch == '\n') {
      ++line;
      ++at;
    } else if (ch == ' ' || ch == '\t' || ch == '\r' || ch == '\f' || ch == '\v') {
      ++at;
    } else if (text.compare(at, 2, "//") == 0 || text.compare(at, 2, "/*") == 0) {
      const bool block = text[at + 1] == '*';
      const std::size_t end = block ? text.find("*/", at + 2) : text.find('\n', at);
      if (end == std::string::npos) {
        return false;
      }
      const std::string_view comment(text.data() + at, end - at);
      if (comment.find('\\') != std::string_view::npos || comment.find("??") != std::string_view::npos) {
        return false;  // a splice (or trigraph) may continue a line comment: not read here
      }
      line += static_cast<int>(std::count(comment.begin(), comment.end(), '\n'));
      at = block ? end + 2 : end;
    } else {
      return true;
    }
  }
  return false;
}

// The words of the directive line at `at` ("#ifndef G" → {"ifndef", "G"}), `at` moved past its
// newline. Empty when it is not a plain directive line: only '#', names, blanks, then a newline.
std::vector<std::string> directive_words(const std::string& text, std::size_t& at, int& line)
{
  if (text[at] != '#') {
    return {};
  }
  const std::size_t end = text.find('\n', at);
  if (end == std::string::npos) {
    return {};
  }
  std::vector<std::string> words;
  for (std::size_t i = at + 1; i < end;) {
    if (text[i] == ' ' || text[i] == '\t' || text[i] == '\r') {
      ++i;
    } else if (deps::identifier_char(text[i])) {
      const std::size_t start = i;
      while (i < end && deps::identifier_char(text[i])) {
        ++i;
      }
      words.emplace_back(text, start, i - start);
    } else {
      return {};  // a comment, a splice, anything else: not read here
    }
  }
  at = end + 1;
  ++line;
  return words;
}

// Whether the conditional opened at line `guard_line` (1-based) of `text` is the whole file: no
// #else or #elif of its own, and nothing but blanks and comments after its #endif. A #line inside
// it is skipped with it (a second inclusion, G defined before, an #else taken): what stands
// outside would be named by the copy (a review found __LINE__ one too high and sizeof(__FILE__)
// the copy's after such an #endif).
bool encloses_the_rest(const std::string& text, int guard_line)
{
  const std::string clean = deps::without_comments(text);
  int line = 0;
  int depth = 0;
  bool closed = false;
  for (std::size_t start = 0; start <= clean.size();) {
    const std::size_t end = std::min(clean.find('\n', start), clean.size());
    const std::string_view row(clean.data() + start, end - start);
    start = end + 1;
    if (++line < guard_line) {
      continue;  // blanks and comments (after_guard() read them)
    }
    const std::size_t first = row.find_first_not_of(" \t\r\f\v");
    if (first == std::string_view::npos) {
      continue;
    }
    if (closed) {
      return false;  // something after the guard's #endif
    }
    const std::size_t introducer = row[first] == '#' ? 1 : row.compare(first, 2, "%:") == 0 ? 2 : 0;
    if (introducer == 0) {
      continue;
    }
    std::size_t at = row.find_first_not_of(" \t", first + introducer);
    std::size_t word_end = at;
    while (word_end < row.size() && deps::identifier_char(row[word_end])) {
      ++word_end;
    }
    const std::string_view directive = at == std::string_view::npos ? std::string_view() : row.substr(at, word_end - at);
    if (directive == "if" || directive == "ifdef" || directive == "ifndef") {
      ++depth;
    } else if (directive == "endif") {
      closed = --depth == 0;
    } else if (depth == 1 && (directive == "else" || directive == "elif" || directive == "elifdef" ||
                              directive == "elifndef")) {
      return false;
    }
  }
  return closed;
}

// Just past `#ifndef G` + `#define G`, when that guard is the whole file, or `#pragma once`, when
// only blanks and comments come before them.
std::optional<Place> after_guard(const std::string& text, std::size_t at)
{
  if (text.find("??") != std::string::npos) {
    return std::nullopt;  // trigraphs (??= is #) where the standard has them: not read here
  }
  int line = 1;
  if (!skip_blank(text, at, line)) {
    return std::nullopt;
  }
  const int guard_line = line;
  const std::vector<std::string> first = directive_words(text, at, line);
  if (first == std::vector<std::string>{"pragma", "once"}) {
    return Place{at, line};
  }
  if (first.size() != 2 || first[0] != "ifndef" || !skip_blank(text, at, line)) {
    return std::nullopt;
  }
  const std::vector<std::string> second = directive_words(text, at, line);
  if (second.size() < 2 || second[0] != "define" || second[1] != first[1] ||  // `#define G` or `#define G 1`
      !encloses_the_rest(text, guard_line)) {
    return std::nullopt;
  }
  return Place{at, line};
}

} // namespace

std::string named(const std::string& path, const std::string& content, bool after_its_guard)
{
  std::string name = "\"";
  for (const char ch : path) {
    if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) {
      return content;
    }
    if (ch == '"' || ch == '\\') {
      name += '\\';
    }
    name += ch;
  }
  name += "\"\n";
  const std::size_t start = content.compare(0, 3, "\xEF\xBB\xBF") == 0 ? 3 : 0;  // a BOM stays first
  const std::optional<Place> place = after_its_guard ? after_guard(content, start) : std::nullopt;
  const std::size_t at = place ? place->offset : start;
  const std::string line = "#line " + std::to_string(place ? place->line : 1) + " " + name;
  return content.substr(0, at) + line + content.substr(at);
}

} // namespace kjit::cache
