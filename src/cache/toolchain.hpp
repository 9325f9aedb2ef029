// The toolchain part of every key, found on warm starts with stat() and one store lookup.
#pragma once

#include "cache/key.hpp"
#include "rtc/toolkit.hpp"
#include "store/store.hpp"

#include <kjit/config.hpp>

namespace kjit::cache {

// The identity of the NVRTC, NVRTC-builtins and nvJitLink library files and of the toolkit's
// version.json (standing for its headers): one line each with path, size, mtime (ns) and inode.
// Costs four stat() calls; loads nothing.
std::string toolchain_file_identity(const rtc::Toolkit& toolkit);

// The KeyContext for `config`: toolkit include folders and the NVRTC/nvJitLink versions with
// build numbers. Known identities come from this process's memo or the store's meta table; an
// unknown one loads NVRTC and nvJitLink once (compiling a probe program), then is recorded.
// `store` may be null (no disk tier).
KeyContext toolchain_context(const Config& config, store::Store* store);

} // namespace kjit::cache
