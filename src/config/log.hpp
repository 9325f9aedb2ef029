// The log sink shared by verbose mode and warnings.
#pragma once

#include <string>
#include <string_view>

namespace kjit::log {

// Sends one line to the current sink (default: stderr). Thread-safe.
void line(std::string_view text);

// Sends "warning: <message>" once per process and message. Thread-safe.
void warn_once(const std::string& message);

} // namespace kjit::log
