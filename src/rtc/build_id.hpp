// The GNU build ID of a toolchain library file: what the linker wrote to tell this build of the
// library from every other, read with a few small reads and without loading the library.
#pragma once

#include "rtc/toolkit.hpp"

#include <optional>
#include <string>

namespace kjit::rtc {

// The NT_GNU_BUILD_ID note of the ELF64 file at `path` in hex ("65be0db3…"), read from its
// PT_NOTE segments (open, fstat and three or four preads; every offset is checked against the
// file's size). nullopt when the file is missing, not a little-endian ELF64 file, has no build ID,
// or (`seen` present) is no longer the file `seen` describes (size, mtime, inode): the ID must
// belong to the file whose identity the caller holds. Never throws; thread-safe.
std::optional<std::string> gnu_build_id(const std::string& path, const FileSeen& seen = {});

} // namespace kjit::rtc
