// A header's copy as NVRTC gets it from the private folder: named, by a #line directive, as the
// user's file.
#pragma once

#include <string>

namespace kjit::cache {

// `content` as NVRTC gets it: a first line `#line 1 "<path>"` makes __FILE__, -lineinfo's .file
// and the log name the user's file, not its copy, by the name NVRTC on disk gives it
// (Resolver::spelled: "inc/x.h" for `#include "inc/x.h"` from k.cu, not the absolute path). Only
// names change: NVRTC's include search (the includer's folder, #include_next, #pragma once) goes
// by where the copy is (measured, NVRTC 13.0; key_rows/item1_*). A path a string literal can't
// hold as it is (a control character) keeps the copy's name. A UTF-8 byte order mark stays first.
std::string named(const std::string& path, const std::string& content);

} // namespace kjit::cache
