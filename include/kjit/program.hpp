// A CUDA C++ program as kjit compiles it: name, source, in-memory headers, options, name expressions.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kjit {

// Typed compile options that render to the option list NVRTC is given (Program::options); raw
// strings stay accepted next to them. Each rendered option reaches the stage that honours it
// (NVRTC; -maxrregcount, -lineinfo and -G also the driver's JIT when PTX is loaded) or the
// compile refuses it with an OptionError (see docs/compile-paths.md): none is silently dropped.
struct CompileOptions {
  std::string standard;                                     // "c++17" → --std=c++17; empty: NVRTC's default
  std::vector<std::pair<std::string, std::string>> defines;  // {"N", "4"} → -DN=4; {"X", ""} → -DX
  std::vector<std::string> undefines;                       // -UNAME
  std::vector<std::string> include_dirs;                    // -IDIR, searched in order (--include-path=DIR
                                                            // for a DIR that starts with '=' or white space)
  std::vector<std::string> pre_includes;                    // --pre-include=HEADER
  bool fast_math = false;                                   // --use_fast_math
  std::optional<bool> ftz;                                  // --ftz=true|false
  std::optional<bool> prec_div;                             // --prec-div=true|false
  std::optional<bool> prec_sqrt;                            // --prec-sqrt=true|false
  std::optional<bool> fmad;                                 // --fmad=true|false
  int max_registers = 0;                                    // --maxrregcount=N; 0: the compiler's choice
  bool line_info = false;                                   // -lineinfo
  bool debug = false;                                       // -G
  std::vector<std::string> extra;                           // other NVRTC options, as given

  // The options in a fixed order (std, defines, undefines, include folders, pre-includes, math,
  // registers, line info, debug, extra), one option per element (the "=" forms), so equal
  // settings give equal keys. Throws OptionError for an empty or malformed name (a define or
  // undefine name that is not an identifier, an empty folder or header, a folder or header that
  // ends in white space, which NVRTC trims off every option) or a negative register count.
  std::vector<std::string> render() const;
};

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

  // Named construction without positional braces (C++17 has no designated initializers); each
  // returns *this, so calls chain:
  //   auto p = kjit::Program::from_source("scale.cu", text).with(options).name_expression("scale<float>");
  static Program from_source(std::string name, std::string source);
  // program_from_file(path): named by the path, so quoted includes are searched in its folder.
  static Program from_file(const std::string& path);
  Program& option(std::string option);                  // appends one raw NVRTC option
  Program& with(const CompileOptions& options);          // appends options.render()
  Program& header(std::string name, std::string content);  // an in-memory header (replaces one of that name)
  Program& name_expression(std::string expression);
};

// Reads `path` into a Program named by `path` as given (so its folder is searched for quoted
// includes). Throws kjit::Error if it can't be read.
Program program_from_file(const std::string& path);

} // namespace kjit
