// Python values to the C++ API's text: strings and os.PathLike paths, lists of them, arches.
#pragma once

#include <kjit/arch.hpp>

#include <nanobind/nanobind.h>

#include <string>
#include <string_view>
#include <vector>

namespace kjit::python {

namespace nb = nanobind;

// A str, or an os.PathLike whose os.fspath() is a str. Throws nb::type_error naming `what`.
std::string text_of(nb::handle value, const char* what);

// An iterable of text_of() values (not a single str). None is empty. Throws nb::type_error.
std::vector<std::string> text_list(nb::handle value, const char* what);

// Text kjit hands out (a compiler's log, a message, a source read from a file) as a str: UTF-8,
// with bytes that are not UTF-8 replaced by U+FFFD (a Latin-1 comment NVRTC echoes must not turn
// a CompileError into a UnicodeDecodeError).
nb::str str_of(std::string_view text);

// None → auto; "sm_90", "compute_90", "auto" → Arch::parse (kjit.ArchError if malformed).
Arch arch_of(nb::handle value);

} // namespace kjit::python
