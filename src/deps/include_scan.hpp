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
  int line = 0;
};

// Every include of `text`, in order: #include "…", #include <…>, #include MACRO when MACRO is an
// object-like macro defined in `text` or in `defines` as "…" or <…>, and __has_include(…) probes.
// Comments and line continuations are handled; conditionals are not evaluated (conservative).
std::vector<IncludeDirective> scan_includes(const std::string& text, const std::map<std::string, std::string>& defines);

// Object-like macros from -D options: "-DNAME=VALUE" → NAME → VALUE.
std::map<std::string, std::string> defines_from_options(const std::vector<std::string>& options);

} // namespace kjit::deps
