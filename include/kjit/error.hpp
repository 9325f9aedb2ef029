// kjit's exception hierarchy: every failure the library reports is one of these.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace kjit {

// Base of every kjit error.
class Error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// The compiler rejected the program. Carries the full log and the options it was given.
class CompileError : public Error {
public:
  CompileError(std::string program, std::string arch, std::string log, std::vector<std::string> options);

  const std::string& program_name() const noexcept { return m_program; }
  const std::string& arch() const noexcept { return m_arch; }
  const std::string& log() const noexcept { return m_log; }
  const std::vector<std::string>& options() const noexcept { return m_options; }

private:
  std::string m_program;
  std::string m_arch;
  std::string m_log;
  std::vector<std::string> m_options;
};

// A compile option the compiler does not accept (or one kjit reserves, such as -arch).
class OptionError : public Error {
public:
  using Error::Error;
};

// An arch that can't be parsed or that NVRTC can't build for.
class ArchError : public Error {
public:
  using Error::Error;
};

// NVRTC or nvJitLink failed in itself (library missing, out of memory, internal error): not the
// program's fault. `status` is the library's own result code.
class ToolchainError : public Error {
public:
  ToolchainError(const std::string& message, int status) : Error(message), m_status(status) {}
  int status() const noexcept { return m_status; }

private:
  int m_status;
};

// A CUDA driver call failed. `result` is the CUresult.
class CudaError : public Error {
public:
  CudaError(const std::string& message, int result) : Error(message), m_result(result) {}
  int result() const noexcept { return m_result; }

private:
  int m_result;
};

// Launch arguments that do not match the kernel's parameters as its cubin declares them: a wrong
// count (parameter() is the first missing or extra one) or a wrong size. Thrown before the driver
// is called, so nothing reached the device.
class LaunchError : public Error {
public:
  LaunchError(const std::string& message, std::string kernel, std::size_t parameter, std::size_t expected,
              std::size_t given)
    : Error(message), m_kernel(std::move(kernel)), m_parameter(parameter), m_expected(expected), m_given(given)
  {
  }
  const std::string& kernel() const noexcept { return m_kernel; }
  std::size_t parameter() const noexcept { return m_parameter; }
  // Sizes in bytes; for a count mismatch, the numbers of parameters and of arguments.
  std::size_t expected() const noexcept { return m_expected; }
  std::size_t given() const noexcept { return m_given; }

private:
  std::string m_kernel;
  std::size_t m_parameter;
  std::size_t m_expected;
  std::size_t m_given;
};

// A module image (Context::load_image, load_file, load of a Binary) that is not a loadable cubin,
// fatbin or PTX text, or a file that can't be read. `name` names the image (the path of a file).
// Thrown before the driver is called.
class ImageError : public Error {
public:
  ImageError(const std::string& message, std::string name) : Error(message), m_name(std::move(name)) {}
  const std::string& name() const noexcept { return m_name; }

private:
  std::string m_name;
};

// A module variable read or written with a size other than its own (Module::read_global,
// get_global…). Thrown before the driver is called.
class GlobalError : public Error {
public:
  GlobalError(const std::string& message, std::string variable, std::size_t expected, std::size_t given)
    : Error(message), m_variable(std::move(variable)), m_expected(expected), m_given(given)
  {
  }
  const std::string& variable() const noexcept { return m_variable; }
  std::size_t expected() const noexcept { return m_expected; }  // the variable's size in bytes
  std::size_t given() const noexcept { return m_given; }

private:
  std::string m_variable;
  std::size_t m_expected;
  std::size_t m_given;
};

// The store (LMDB) or the cache folder failed. `code` is the LMDB or errno code.
class StoreError : public Error {
public:
  StoreError(const std::string& message, int code) : Error(message), m_code(code) {}
  int code() const noexcept { return m_code; }

private:
  int m_code;
};

// A bundle file (kjit export/import, KJIT_BUNDLE) can't be read or written, or is damaged.
// `path` names the file.
class BundleError : public Error {
public:
  BundleError(const std::string& message, std::string path) : Error(message), m_path(std::move(path)) {}
  const std::string& path() const noexcept { return m_path; }

private:
  std::string m_path;
};

// A setting has a bad value. `variable` names the environment variable or API setting.
class ConfigError : public Error {
public:
  ConfigError(const std::string& variable, const std::string& message)
    : Error(variable + ": " + message), m_variable(variable)
  {
  }
  const std::string& variable() const noexcept { return m_variable; }

private:
  std::string m_variable;
};

} // namespace kjit
