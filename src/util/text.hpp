// Text helpers with no kjit knowledge.
#pragma once

#include <string>

namespace kjit::util {

// `value` on one line: backslash, newline, carriage return and tab as \\, \n, \r and \t. The key
// texts, manifests and search contexts write names this way, so a name can't start a line of its own.
std::string escape_line(const std::string& value);

} // namespace kjit::util
