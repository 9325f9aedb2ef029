// The log sink shared by verbose mode and warnings.
#pragma once

#include <string_view>

namespace kjit::log {

// Sends one line to the current sink (default: stderr). Thread-safe.
void line(std::string_view text);

} // namespace kjit::log
