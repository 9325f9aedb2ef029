// The canonical key texts (program.txt, options.txt) and the entry name derived from them.
#pragma once

#include <kjit/arch.hpp>
#include <kjit/program.hpp>

#include "deps/resolver.hpp"
#include "util/hash.hpp"

#include <string>
#include <vector>

namespace kjit::cache {

struct KeyTexts {
  std::string program_txt;
  std::string options_txt;
  util::Sha256 digest;  // sha256(program_txt ‖ options_txt)
  std::string hex() const { return util::to_hex(digest); }
};

// What besides the program determines the output: filled from the toolkit and the toolchain.
struct KeyContext {
  std::vector<std::string> toolkit_include_dirs;
  std::string nvrtc_identity;      // "13.0 V13.0.88 CL-36424714"
  std::string nvjitlink_identity;  // "13.0"
  std::vector<int> supported_archs;  // nvrtcGetSupportedArchs, remembered with the versions
  std::string toolkit_headers;       // fingerprint of the toolkit's include trees (toolchain.hpp)
};

// Options in canonical form: "-I dir" → "-I/abs/dir", "--define-macro=X" → "-DX", relative
// include folders made absolute. Order is kept (it matters to the compiler).
std::vector<std::string> normalize_options(const std::vector<std::string>& options);

// Escapes '\\' and newlines so a value always stays on one line of a key text.
std::string escape_line(const std::string& value);

// The key of `program` on `arch`. `includes` are the disk headers it uses (found by
// deps::resolve_includes or a manifest); each is listed with its content hash and path.
KeyTexts make_key(const Program& program, const Arch& arch, const KeyContext& context,
                  const std::vector<deps::DiskHeader>& includes = {});

} // namespace kjit::cache
