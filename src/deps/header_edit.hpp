// Whether an edit of a header leaves the closure of a program's headers as it was: a project's
// edit-compile loop changes a value in a header of its own, and the 1 691 headers of a vendored
// CCCL around it were predicted and closed again on every miss (docs/includes.md, "An edit that
// keeps the closure").
#pragma once

#include <set>
#include <string>

namespace kjit::deps {

// Whether a header whose text was `before` and is `after` gives a resolution the same closure:
// the same directive lines, in order (every include, probe and condition; comments and white
// space aside), but for the bodies of #defines of the same names, plain in both (no quote,
// bracket, slash, backslash or `#`, none of the words include, _Pragma, pragma, once,
// __has_include, nor a word that names a file or the time); the same answers to every question
// the resolver asks of a text (a paste and the pieces it may join, a file's name, the time, `once`
// through a macro, #pragma once); and no trigraph in either (`??/` splices for kjit, not for
// NVRTC's C++17). Lines of code may change.
// `changed_macros` gets the names of the macros whose definitions changed: a closure still depends
// on them where another text names one in a directive (names_in_a_directive()).
bool edit_keeps_closure(const std::string& before, const std::string& after, std::set<std::string>& changed_macros);

// Whether `text` names `macro` (a whole word, outside comments) on a directive line where its value
// may count: an include, a probe (#if), another macro's definition. Its own #define, #undef, #ifdef
// and #ifndef don't count, nor lines of code, where the resolver looks for nothing a value changes.
bool names_in_a_directive(const std::string& text, const std::string& macro);

} // namespace kjit::deps
