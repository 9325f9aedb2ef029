// Finding the #include directives of a CUDA C++ text without preprocessing it.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

namespace kjit::deps {

struct IncludeDirective {
  std::string name;          // as written between the quotes or brackets
  bool quoted = false;       // "name" (searched next to the includer first) rather than <name>
  bool conditional = false;  // under #if/#ifdef/#ifndef, or a __has_include probe
  bool next = false;          // #include_next
  bool computed = false;      // a macro this scanner cannot expand: `name` holds the tokens
  bool macro = false;         // the name came from expanding a macro (the scanner's best guess)
  bool probe = false;         // __has_include/__has_include_next (or a macro wrapping it), not an #include
  int line = 0;
};

// What the scan of several files learns together (the resolver keeps one per compile).
struct ScanMacros {
  // Every value each object-like macro is defined with in any file scanned (conditionals are not
  // evaluated: all of them are possible).
  std::map<std::string, std::set<std::string>> values;
  // Every body each function-like macro is defined with in any file scanned.
  std::map<std::string, std::set<std::string>> functions;
  // Function-like macros that hand a parameter to __has_include (CCCL's _CCCL_HAS_INCLUDE(x)).
  std::set<std::string> wrappers;
};

// `text` with its trigraphs (??= ??/ ??( …) replaced by the characters they stand for, line
// for line; `text` itself when it has no "??". C++14 and before have trigraphs (NVRTC's -std=c++14):
// `??/` before a newline splices, `??=include` is a directive.
std::string trigraphs_replaced(const std::string& text);

// `text` with its comments removed and raw strings' contents emptied, continued lines joined, one
// '\n' kept per line of `text` (a line joined to the one before is empty): the scanner's first pass.
// Trigraphs are not replaced (trigraphs_replaced() first where the standard has them).
std::string without_comments(const std::string& text);

// Every include of `text`, in order: #include "…", #include <…>, #include MACRO when MACRO is an
// object-like macro defined in `text` or in `defines` as "…" or <…>, and __has_include(…) probes.
// Comments, strings, raw strings, digit separators, digraphs (%:include) and line continuations are
// handled; conditionals are not evaluated. An include it cannot follow is returned as `computed`,
// never dropped: the compiler's own answer then decides. A probe (__has_include, or a call of a
// wrapper in `shared`) whose operand is not a header name is returned `computed`, its name the
// operand as written: the resolver expands it with every value in `shared` once all files are
// scanned. `shared`, when given, gets this text's definitions and wrappers.
std::vector<IncludeDirective> scan_includes(const std::string& text, const std::map<std::string, std::string>& defines,
                                            ScanMacros* shared = nullptr);

// Object-like macros from -D options ("-DNAME=V", "-D NAME=V", "--define-macro=NAME=V", "--define-macro
// NAME=V"; NAME alone is 1): NAME → V, the last definition winning.
std::map<std::string, std::string> defines_from_options(const std::vector<std::string>& options);

} // namespace kjit::deps
