// The toolchain part of every key, found on warm starts with stat() and one store lookup.
#pragma once

#include "cache/key.hpp"
#include "rtc/toolkit.hpp"
#include "store/store.hpp"

#include <kjit/config.hpp>

#include <optional>

namespace kjit::remote {
class RemoteTier;
}

namespace kjit::cache {

// The identity of the NVRTC, NVRTC-builtins and nvJitLink library files and of the toolkit's
// version.json (standing for its headers): one line each with path, size, mtime (ns) and inode.
// Costs four stat() calls; loads nothing.
std::string toolchain_file_identity(const rtc::Toolkit& toolkit);

// The meta rows that remember each toolchain's whole key part ("toolchain context <sha256>":
// unix time, then the lines of the part). Bundles carry them (their keys start "toolchain ").
inline constexpr const char* k_context_prefix = "toolchain context ";

// The KeyContext for `config`: toolkit include folders and the NVRTC/nvJitLink versions with
// build numbers. Known identities come from this process's memo or the store's meta table; an
// unknown one loads NVRTC and nvJitLink once (compiling a probe program), then is recorded, and
// the whole context is remembered in the store. The toolkit headers' fingerprint is found (folder
// stats, toolkit_headers.hpp) when the first key that holds it is made, and the context is then
// remembered with it; a store that remembers no context of this toolchain gets one now (or with the
// caller's next commit: `deferred` below). A
// store that knows no versions of these library files asks `remote` (if any) for the fleet's memo,
// named by the libraries' GNU build IDs, before loading anything (one GET); versions it had to
// learn by loading NVRTC are left there for the next new node (RemoteTier::put_meta), with the
// fingerprint of its context, which a new node remembers its context with instead of reading the
// toolkit's headers (as a bundle's context row does; its own keys find their own). When
// the toolkit has no NVRTC library file, the context is remembered_toolchain() of the store (hits
// are served without NVRTC; a miss fails with a ToolchainError naming the missing library).
// `store` may be null (no disk tier); the context must not outlive it. With `deferred`, the rows
// that remember the context are added there instead of committed: the caller writes them with
// its next commit (a fresh node's first hit: one fdatasync for them and the entry, not two).
// With `fingerprint_later`, a new store's context is not remembered with this toolkit's headers'
// fingerprint now (reading them: ≈ 35 ms) but when the first key that holds it is made: the
// caller is about to make one (a first miss of a program that includes, compiled while another
// thread makes its key). With `unknown`, NVRTC's versions that only NVRTC can tell (a probe
// compile) are not learned: `*unknown` is set and the context returned is not to be used.
KeyContext toolchain_context(const Config& config, store::Store* store, remote::RemoteTier* remote = nullptr,
                             std::vector<store::Store::Row>* deferred = nullptr, bool fingerprint_later = false,
                             bool* unknown = nullptr);

// Writes the "toolchain build <XXH3 of the build IDs>" row of `config`'s toolkit into `store` when
// the store knows the versions of these library files and lacks it (a store made before the row
// was written): a bundle exported from it then lets another machine's empty store find the
// versions without loading NVRTC. Reads the libraries' ELF notes; loads nothing.
void remember_build_memo(const Config& config, store::Store& store);

// The toolchain a store without a loadable NVRTC uses: of the contexts remembered in `store`,
// the newest NVRTC version (major.minor), and of equal versions the one remembered last.
// nullopt when the store remembers none.
std::optional<KeyContext> remembered_toolchain(const store::Store& store);

} // namespace kjit::cache
