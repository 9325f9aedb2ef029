// The absolute-name check of programs with a computed #include: which macro names may leave a '/'
// first in a header name, and whether a text may form one.
#pragma once

#include "deps/include_scan.hpp"

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace kjit::deps {

// Which names' expansions may end "open" where a computed #include's tokens are expanded, so that a
// '/' after them may come first in a header name: a macro one of whose definitions (in the scanned
// texts or the toolkit's headers) is empty or ends in anything but a number, a string literal or a
// name that ends closed (a punctuator such as '<' or ',', the ')' of a call); a name reserved to the
// implementation (`__x`, `_X`) that nothing defines, other than NVRTC's predefined ones. A name
// nothing defines stays itself (`cuda` in `<cuda/std/header>`), and so does a macro whose expansion
// reaches itself again. The toolkit's definitions (`toolkit`) are read only when a name is asked.
class OpenEnds {
public:
  explicit OpenEnds(const ScanMacros& macros, std::function<const ScanMacros*()> toolkit = {})
    : m_macros(macros), m_toolkit(std::move(toolkit))
  {
  }
  // Whether `name`'s expansion may end open; remembered in asked().
  bool ask(const std::string& name) const;
  // Whether a call `name(…)` may end open: an object-like macro (it may name a function-like one),
  // a function-like macro with a body not ending in a number or string literal (a last name may be
  // a parameter), an undefined reserved name. A name no macro has (sizeof) ends closed.
  bool ask_call(const std::string& name) const;
  // The names ask() and ask_call() were asked about ("name" and "name()"), with their answers.
  const std::map<std::string, bool>& asked() const { return m_asked; }

private:
  enum class End { open, closed_name, closed_literal };
  bool may_end_open(const std::string& name) const;
  End value_end(const std::string& value) const;
  // The definitions of `name` in `table`: the scanned texts' and the toolkit's.
  void definitions(const std::map<std::string, std::set<std::string>> ScanMacros::*table, const std::string& name,
                   std::vector<const std::set<std::string>*>& out) const;
  const ScanMacros& m_macros;
  std::function<const ScanMacros*()> m_toolkit;
  mutable const ScanMacros* m_toolkit_macros = nullptr;
  mutable std::map<std::string, int> m_known;  // name → 0 deciding, 1 may end open, 2 ends closed
  mutable std::map<std::string, bool> m_asked;
  mutable std::size_t m_assumed = 0;  // answers given for names still being decided (a cycle)
  mutable std::size_t m_steps = 0;
};

// Whether macros of `text` could form an absolute header name in a computed #include (one only
// NVRTC expands, which then opens that name on disk itself). A '/' counts where it is followed,
// past line splices, by a name's character or '.' (or, in a #define or #include line, by the end
// of the line, which the tokens after the macro's use continue), and stands:
// - first in a string literal (`"/tmp/x"`, raw strings and `u8`/`L` prefixes understood);
// - right after '(', ',' or '<' (a macro argument or an angle name starting with it), or first in
//   a #define's body;
// - in a #define or #include line, right after a name whose expansion may end open (`ends`; a
//   parameter of the macro being defined and __VA_ARGS__ always may: "P(EMPTY /usr/x.h)",
//   "<dir/x.h>", "LT/usr" with LT '<'), after the ')' of a call that may or of a bare group
//   (`E()/usr`), or after a paste (`##`, `%:%:`).
// `<cuda/std/header>` forms no absolute name unless `cuda` may expand to nothing. Comments are
// skipped; code outside those lines (division) never counts.
bool may_form_absolute_name(const std::string& text, const OpenEnds& ends);

// The macros the toolkit's headers under `dirs` define (every definition of every file below them,
// conditionals not evaluated): object-like values and function-like bodies. Read once per process
// for each list of folders (≈ 25 MB for CUDA 13.0: about 0.1 s), on the first call that needs it.
const ScanMacros& toolkit_macros(const std::vector<std::string>& dirs);

} // namespace kjit::deps
