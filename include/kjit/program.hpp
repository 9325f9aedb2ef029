// A CUDA C++ program as kjit compiles it: name, source, in-memory headers, options, name expressions.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace kjit {

// Plain value type; copy freely. Nothing here touches the file system or the toolchain.
struct Program {
  // Shown in errors, logs and the mirror; part of the key.
  std::string name;
  // The CUDA C++ text.
  std::string source;
  // In-memory headers: include name → content. They shadow files of the same name.
  std::map<std::string, std::string> headers;
  // NVRTC options such as "-DN=4", "-I/path", "--std=c++17". The arch is not an option: it is
  // the second argument of compile(); "-arch"/"--gpu-architecture" here is an OptionError.
  std::vector<std::string> options;
  // Expressions such as "scale<float>" whose lowered (mangled) names are wanted.
  std::vector<std::string> name_expressions;
};

// Reads `path` into a Program named after the file. Throws kjit::Error if it can't be read.
Program program_from_file(const std::string& path);

} // namespace kjit
