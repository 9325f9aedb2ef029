// Compiling with exactly the user headers kjit hashed: a private folder of copies, and NVRTC's
// "cannot open source file" answered by resolving the name as nvcc would and compiling again.
#pragma once

#include <kjit/arch.hpp>
#include <kjit/binary.hpp>
#include <kjit/config.hpp>

#include "cache/speculation.hpp"
#include "deps/resolver.hpp"

namespace kjit::cache {

// Compiles `program` with NVRTC, giving it no user include folder: the headers in `resolver`
// are copied (the exact bytes hashed) into a fresh private folder that mirrors their paths, and
// NVRTC searches only that folder (then the toolkit). A missing include is resolved from its
// includer, added to `resolver`, and the compile repeated. Throws CompileError with NVRTC's log
// (private paths removed) when nothing more can be added; other kjit errors as rtc::compile.
// When the private folder can't answer as the disk would (resolver.unfaithful()), compiles from
// the disk instead, logs why, and marks the resolution not recordable (never looked up again).
// Throws HeadersChanged when a pre-include appeared in the working directory meanwhile.
// With `speculation` (this program compiled from the disk meanwhile), its binary is taken when
// NVRTC read only what `resolver` answers for (Speculation::adopt), and for a program compiled
// from the disk anyway.
Binary compile_with_includes(const Config& config, const Program& program, const Arch& arch,
                             deps::Resolver& resolver, int* rounds = nullptr, Speculation* speculation = nullptr);

} // namespace kjit::cache
