// A CUDA C++ program as kjit compiles it: name, source, in-memory headers, options, name expressions.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace kjit {

// Plain value type; copy freely. Nothing here touches the file system or the toolchain.
struct Program {
  // Shown in errors, logs and the mirror; part of the key. Its folder, relative to the working
  // directory, is where quoted includes of the source are searched first (as NVRTC and nvcc do
  // for a file): a Program made from a string has no folder of its own, so a bare name means
  // the working directory; pass "--no-source-include" to search only the -I folders.
  std::string name;
  // The CUDA C++ text.
  std::string source;
  // In-memory headers: include name → content. They shadow files of the same name (NVRTC
  // matches them by the name as written, from any includer, before any folder).
  std::map<std::string, std::string> headers;
  // NVRTC options such as "-DN=4", "-I/path", "--std=c++17". The arch is not an option: it is
  // the second argument of compile(); "-arch"/"--gpu-architecture" here is an OptionError. An -I
  // naming a file or a missing folder, and an empty -D, are OptionErrors (Cache::prepare).
  std::vector<std::string> options;
  // Expressions such as "scale<float>" whose lowered (mangled) names are wanted.
  std::vector<std::string> name_expressions;
};

// Reads `path` into a Program named by `path` as given (so its folder is searched for quoted
// includes). Throws kjit::Error if it can't be read.
Program program_from_file(const std::string& path);

} // namespace kjit
