// Resolving a program's includes the way NVRTC does, so kjit hashes exactly what NVRTC compiles.
#pragma once

#include <kjit/arch.hpp>
#include <kjit/program.hpp>

#include "util/hash.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace kjit::deps {

// What one stat() says about a path; equal stamps mean "unchanged" for the manifest.
struct FileStamp {
  bool exists = false;
  std::int64_t size = 0;
  std::int64_t mtime_ns = 0;
  std::uint64_t inode = 0;
  friend bool operator==(const FileStamp& a, const FileStamp& b)
  {
    return a.exists == b.exists && a.size == b.size && a.mtime_ns == b.mtime_ns && a.inode == b.inode;
  }
};

FileStamp stamp_of(const std::string& path);

// A header found on disk outside the toolkit (through the includer's folder or a -I folder).
struct DiskHeader {
  std::string name;  // as written in the #include: the in-memory name NVRTC is given
  std::string path;  // where it was found
  util::Sha256 hash;
  FileStamp stamp;
  std::string content;  // filled by resolve_includes; empty when the header came from a manifest
};

// A folder where an include was looked for and not found: a file appearing there could shadow
// what was found later in the search, so its stamp (mtime) is part of the manifest.
struct ProbedDir {
  std::string path;
  FileStamp stamp;
};

struct Resolution {
  std::vector<DiskHeader> headers;  // unique by path, in discovery order
  std::vector<ProbedDir> dirs;      // unique by path
};

// Follows every include of `program` recursively. Search order, as NVRTC's: the program's
// in-memory headers; for "…" the includer's folder (the program name's folder, relative to the
// working directory, for the main source); the -I folders in order; the toolkit folders (whose
// headers belong to the toolkit and are not followed further). Includes under #if are followed
// when found and skipped when not; an unconditional include that can't be found is a
// CompileError naming the file and its includer.
Resolution resolve_includes(const Program& program, const Arch& arch, const std::vector<std::string>& toolkit_dirs);

} // namespace kjit::deps
