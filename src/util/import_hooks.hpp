// Redirecting one loaded library's calls into other libraries: the slots of its global offset
// table that its imports go through (ELF: x86-64, AArch64), rewritten to point elsewhere. Only
// that library's calls change; every other caller of the same functions is untouched.
#pragma once

#include <set>
#include <string>
#include <vector>

namespace kjit::util {

struct ImportHook {
  const char* name;   // the imported symbol, without a version ("open", "__xstat")
  void* replacement;  // called instead, with the same signature
};

// Rewrites, in the loaded library holding `address_in_library`, every import slot of a symbol
// named in `hooks` to its replacement. Returns the names whose slots were rewritten; empty when
// the library's tables can't be read or a slot can't be written (its pages stay as they were).
// Not undone: the replacements must live as long as the process.
std::set<std::string> hook_imports(const void* address_in_library, const std::vector<ImportHook>& hooks);

} // namespace kjit::util
