// The canonical key texts (program.txt, options.txt) and the entry name derived from them.
#pragma once

#include <kjit/arch.hpp>
#include <kjit/program.hpp>

#include "deps/resolver.hpp"
#include "util/hash.hpp"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace kjit::cache {

struct KeyTexts {
  std::string program_txt;
  std::string options_txt;
  util::Sha256 entry_key;  // sha256(program_txt ‖ options_txt) (docs/keys.md)
  std::string hex() const { return util::to_hex(entry_key); }
};

// The content fingerprint of the toolkit's include trees (toolkit_headers.hpp), found when first
// asked: only keys of programs that may name a disk header hold it (make_key_texts), so a process that
// only makes other keys never checks the trees. Copies share one value; thread-safe.
class ToolkitHeaders {
public:
  ToolkitHeaders() = default;  // none: keys get no toolkit-headers line
  ToolkitHeaders(std::string known);  // NOLINT: a known value (remembered, or a test's)
  explicit ToolkitHeaders(std::function<std::string()> find);  // called once, on the first value()
  // The fingerprint; empty for none. Throws what `find` throws (then asked again next time).
  const std::string& value() const;

private:
  struct State;
  std::shared_ptr<State> m_state;
};

// What besides the program determines the output: filled from the toolkit and the toolchain.
struct KeyContext {
  std::vector<std::string> toolkit_include_dirs;   // absolute: where this process searches
  std::vector<std::string> toolkit_include_names;  // as the key names them: relative to the toolkit root
  std::string nvrtc_identity;      // "13.0 V13.0.88 CL-36424714"
  std::string nvjitlink_identity;  // "13.0"
  // The compiler's environment settings that change its output ("NV_NVVM_VERSION=nvvm-latest\n"),
  // read when the context is made (compiler_environment()); empty, and no key line, when none is set.
  std::string compiler_environment;
  std::vector<int> supported_archs;  // nvrtcGetSupportedArchs, remembered with the versions
  ToolkitHeaders toolkit_headers;    // content fingerprint of the toolkit's include trees
};

// The folders a key names user headers by (docs/cache-format.md, "Portable keys"): the -I
// folders in order and the main source's folder, absolute and normalized as deps::search_context
// makes them, so that a key never holds where the project is.
struct KeyRoots {
  std::vector<std::string> include_dirs;
  std::string source_dir;  // empty with --no-source-include
};
KeyRoots key_roots(const Program& program);

// `path` (absolute, normalized) as a key names it: "{I<n>}/rel" under the n-th -I folder (the
// first that holds it), "{src}/rel" under the source folder, else relative to the source folder
// ("{src}/../x.h"); as it is when there is no folder to name it by.
std::string portable_path(const KeyRoots& roots, const std::string& path);

// `text` with each "{I<n>}" and "{src}" of portable_path() replaced by the folder it stands for
// in `roots` (for people: explain names the files where they are now).
std::string local_places(const KeyRoots& roots, std::string text);

// `options` with every -I folder made absolute (the -I forms only; everything else as written):
// what a record keeps, so compile.sh names the folders actually used.
std::vector<std::string> absolute_include_options(const std::vector<std::string>& options);

// Options in canonical form: "-I dir" → "-I/abs/dir", "--define-macro=X" → "-DX", "-std=" →
// "--std=", a short name NVRTC reads as its long one by the long one ("-ftz=true" →
// "--ftz=true", "-Xptxas" "-v" → "--ptxas-options=-v"; key.cpp's k_long_names), relative
// include folders made absolute and normalized. Order is kept (it matters to the compiler).
std::vector<std::string> normalize_options(const std::vector<std::string>& options);

// The key of `program` on `arch`. `includes` are the disk headers it uses (found by
// deps::resolve_includes or a manifest); each is listed with its content hash, include name and
// portable_path(). Nothing in the texts depends on where the project or the toolkit is: the
// program's name is its last path component, -I folders are "{I<n>}", toolkit folders relative.
// The toolkit headers' fingerprint is in the key of a program that may name a disk header
// (!direct_eligible): NVRTC reads no toolkit header for the others, so their keys leave it out
// (and a lookup of one never asks for it).
KeyTexts make_key_texts(const Program& program, const Arch& arch, const KeyContext& context,
                  const std::vector<deps::DiskHeader>& includes = {});
// What of `program`'s key the program alone decides, without its disk headers or where it is: the
// name's last component, the options as the key names them, the in-memory headers, the name
// expressions and the source. Two programs whose keys may be equal have equal digests; a store
// that holds no entry of a digest for an arch can't serve a lookup of it (speculation.cpp).
util::Sha256 program_digest(const Program& program);
// How many key texts make_key_texts() made in this process (a test checks what a miss repeats).
std::uint64_t keys_made() noexcept;

} // namespace kjit::cache
