// Text helpers with no kjit knowledge.
#pragma once

#include <string>
#include <string_view>

namespace kjit::util {

// `value` on one line: backslash, newline, carriage return and tab as \\, \n, \r and \t. The key
// texts, manifests and search contexts write names this way, so a name can't start a line of its own.
std::string escape_line(std::string_view value);
// The value escape_line() was made from (a backslash before any other character stands for it).
std::string unescape_line(std::string_view line);

// Where `needle` first occurs in `text` at or after `from`, or npos: as std::string::find, faster
// for the names of headers' texts (it stops at the needle's first character that is not '_').
std::size_t find_text(std::string_view text, std::string_view needle, std::size_t from = 0);

} // namespace kjit::util
