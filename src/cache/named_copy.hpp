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
//
// `after_its_guard`: the #line goes just after the header's include guard (`#ifndef G` and
// `#define G`) or `#pragma once`, when only blanks and comments come before them, numbered as the
// line it stands before. NVRTC reads a header whose guard is its first directive once per compile,
// and one with a #line before its guard again at each inclusion: a vendored CCCL's compile took
// 0.2 s (7 %) longer (measured, NVRTC 13.0: 2.74-2.89 s from the files as they are, 2.90-3.12 s
// with #line 1 in each, 2.66-2.83 s with #line after the guards). The lines before it keep the
// copy's name: only for a compile whose binary names no file by line (no -G, no -lineinfo), where
// they hold nothing but comments and the guard.
std::string named(const std::string& path, const std::string& content, bool after_its_guard = false);

} // namespace kjit::cache
