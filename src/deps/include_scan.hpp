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
  // Function-like macros that hand a parameter to __has_include (CCCL's _CCCL_HAS_INCLUDE(x)).
  std::set<std::string> wrappers;
};

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

// Which names may expand to nothing where a computed #include's tokens are expanded, from what the
// scanned texts define: a macro with a definition made only of such names (an empty one included)
// or calling a function-like macro; a name reserved to the implementation (`__x`, `_X`) that no
// scanned text defines (NVRTC's and the toolkit's own macros, which kjit does not scan). Any other
// name no scanned text defines as an object-like macro stays itself, and so does a macro whose
// expansion reaches itself again.
class EmptyNames {
public:
  explicit EmptyNames(const ScanMacros& macros) : m_macros(macros) {}
  bool may_be_empty(const std::string& name) const;
  // Every name may_be_empty() was asked about, with its answer.
  const std::map<std::string, int>& asked() const { return m_known; }

private:
  bool value_may_be_empty(const std::string& value) const;
  const ScanMacros& m_macros;
  mutable std::map<std::string, int> m_known;  // name → 0 deciding, 1 may be empty, 2 never
};

// Whether macros of `text` could form an absolute header name in a computed #include (one only
// NVRTC expands, which then opens that name on disk itself): a string literal starting with '/',
// a '/' right after '(', ',' or '<' (a macro argument or an angle name starting with it), or a
// #define whose body starts with '/', or, in a #define or #include line, a '/' right after a name
// that may expand to nothing (`empty`; a function-like macro's parameter or __VA_ARGS__ always
// may: "P(EMPTY /usr/x.h)", "<dir/x.h>" with `dir` a parameter) or right after `##`; each '/'
// followed by a name's character or '.'. `<cuda/std/header>` forms no absolute name unless `cuda`
// may expand to nothing. Comments are skipped; code outside those lines (division) never counts.
bool may_form_absolute_name(const std::string& text, const EmptyNames& empty);

// Object-like macros from -D options ("-DNAME=V", "-D NAME=V", "--define-macro=NAME=V", "--define-macro
// NAME=V"; NAME alone is 1): NAME → V, the last definition winning.
std::map<std::string, std::string> defines_from_options(const std::vector<std::string>& options);

} // namespace kjit::deps
