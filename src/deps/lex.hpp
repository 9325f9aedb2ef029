// The lexing pieces the include scanner and the absolute-name check share: names, blanks of a
// directive line, raw strings, a function-like macro's parameters.
#pragma once

#include <array>
#include <cstddef>
#include <set>
#include <string>

namespace kjit::deps {

namespace detail {
// ASCII letters, digits and '_' (the host's locale plays no part: NVRTC's rules don't change with it).
inline constexpr std::array<bool, 256> k_identifier_chars = [] {
  std::array<bool, 256> table{};
  for (int ch = 0; ch < 256; ++ch) {
    table[ch] = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_';
  }
  return table;
}();
} // namespace detail

// A character of an identifier (or of a pp-number). Inline: the scanners ask it of every byte.
inline bool identifier_char(char ch)
{
  return detail::k_identifier_chars[static_cast<unsigned char>(ch)];
}
// At text[i] == '"': whether a raw-string prefix ("R", "u8R", "LR", …) stands before it.
bool raw_string_start(const std::string& text, std::size_t i);
// Past the horizontal white space of a directive line at `at` (form feed and vertical tab too).
void skip_space(const std::string& line, std::size_t& at);
// The identifier at `at` (empty if none); `at` moves past it.
std::string identifier(const std::string& line, std::size_t& at);
// The parameter names of the function-like macro whose "(" is at `at`.
std::set<std::string> parameters(const std::string& line, std::size_t at);

} // namespace kjit::deps
