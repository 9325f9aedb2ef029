// Program helpers, Binary accessors and error constructors.
#include <kjit/binary.hpp>
#include <kjit/error.hpp>
#include <kjit/program.hpp>

#include "util/file.hpp"

#include <cerrno>
#include <cstring>
#include <sys/stat.h>

namespace kjit {

Program program_from_file(const std::string& path)
{
  // stat, not open: opening a FIFO blocks, and /dev/zero reads without end.
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    throw Error("cannot read " + path + ": " + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) {
    throw Error(path + " is not a regular file");
  }
  std::error_code error;
  auto source = util::read_file(path, error);
  if (!source) {
    throw Error("cannot read " + path + ": " + error.message());
  }
  Program program;
  // Named by its path: quoted includes of the source are searched in the file's own folder, by
  // kjit and by NVRTC alike (issue 10).
  program.name = path;
  program.source = std::move(*source);
  return program;
}

const std::string& Binary::lowered_name(std::string_view expression) const
{
  for (const auto& [expr, lowered] : lowered_names) {
    if (expr == expression) {
      return lowered;
    }
  }
  throw Error("'" + std::string(expression) + "' is not a name expression of this binary");
}

namespace {

std::string compile_error_message(const std::string& program, const std::string& arch, const std::string& log)
{
  std::string message = "compiling " + program + " for " + arch + " failed";
  if (!log.empty()) {
    message += ":\n" + log;
  }
  return message;
}

} // namespace

CompileError::CompileError(std::string program, std::string arch, std::string log, std::vector<std::string> options)
  : Error(compile_error_message(program, arch, log)), m_program(std::move(program)), m_arch(std::move(arch)),
    m_log(std::move(log)), m_options(std::move(options))
{
}

} // namespace kjit
