// Finding the #include directives of a CUDA C++ text without preprocessing it.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace kjit::deps {

struct IncludeDirective {
  std::string name;          // as written between the quotes or brackets
  bool quoted = false;       // "name" (searched next to the includer first) rather than <name>
  bool conditional = false;  // under #if/#ifdef/#ifndef, or a __has_include probe
  bool next = false;          // #include_next
  bool computed = false;      // a macro this scanner cannot expand: `name` holds the tokens
  int line = 0;
};

// Every include of `text`, in order: #include "…", #include <…>, #include MACRO when MACRO is an
// object-like macro defined in `text` or in `defines` as "…" or <…>, and __has_include(…) probes.
// Comments, strings, raw strings, digit separators, digraphs (%:include) and line continuations are
// handled; conditionals are not evaluated. An include it cannot follow is returned as `computed`,
// never dropped: the compiler's own answer then decides.
std::vector<IncludeDirective> scan_includes(const std::string& text, const std::map<std::string, std::string>& defines);

// Object-like macros from -D options: "-DNAME=VALUE" → NAME → VALUE.
std::map<std::string, std::string> defines_from_options(const std::vector<std::string>& options);

} // namespace kjit::deps
