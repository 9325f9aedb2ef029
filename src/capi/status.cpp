// Exceptions to status codes, and the per-thread error state behind kjit_last_error_*().
#include "capi/status.hpp"

#include <kjit/driver.hpp>
#include <kjit/error.hpp>
#include <kjit/version.hpp>

#include <exception>
#include <new>
#include <string>

namespace kjit::capi {

namespace {

// The last failure on this thread. `out_of_memory` stands in for a message that could not be
// allocated, so reporting a bad_alloc never needs memory.
struct LastError {
  kjit_status status = KJIT_OK;
  std::string message;
  std::string log;
  int code = 0;
  bool out_of_memory = false;
};

thread_local LastError t_last;

void record(kjit_status status, const char* what, const std::string* log, int code) noexcept
{
  t_last.status = status;
  t_last.code = code;
  try {
    t_last.message.assign(kjit_status_name(status)).append(": ").append(what);
    t_last.log.assign(log != nullptr ? *log : std::string());
    t_last.out_of_memory = false;
  } catch (...) {
    t_last.message.clear();
    t_last.log.clear();
    t_last.out_of_memory = true;
  }
}

// A CudaError on a machine with no driver or no device is the "no GPU here" case a caller may
// plan for (compile and cache only); any other is a driver failure to report.
kjit_status driver_status_of(const CudaError&) noexcept
{
  const DriverProblem problem = driver_status().problem;
  return problem == DriverProblem::no_driver || problem == DriverProblem::no_device ? KJIT_ERROR_NO_GPU
                                                                                     : KJIT_ERROR_DRIVER;
}

} // namespace

kjit_status fail(kjit_status status, const char* message) noexcept
{
  record(status, message, nullptr, 0);
  return status;
}

kjit_status fail(kjit_status status, const char* function, const char* argument) noexcept
{
  try {
    return fail(status, (std::string(function) + ": `" + argument + "` is NULL").c_str());
  } catch (...) {
    return fail(status, argument);
  }
}

kjit_status fail_current_exception() noexcept
{
  // The finer kinds first: each derives from kjit::Error.
  try {
    throw;
  } catch (const CompileError& e) {
    record(KJIT_ERROR_COMPILE, e.what(), &e.log(), 0);
  } catch (const OptionError& e) {
    record(KJIT_ERROR_OPTION, e.what(), nullptr, 0);
  } catch (const ArchError& e) {
    record(KJIT_ERROR_ARCH, e.what(), nullptr, 0);
  } catch (const ToolchainError& e) {
    record(KJIT_ERROR_TOOLCHAIN, e.what(), nullptr, e.status());
  } catch (const ConfigError& e) {
    record(KJIT_ERROR_CONFIG, e.what(), nullptr, 0);
  } catch (const StoreError& e) {
    record(KJIT_ERROR_STORE, e.what(), nullptr, e.code());
  } catch (const BundleError& e) {
    record(KJIT_ERROR_BUNDLE, e.what(), nullptr, 0);
  } catch (const CudaError& e) {
    record(driver_status_of(e), e.what(), nullptr, e.result());
  } catch (const ImageError& e) {
    record(KJIT_ERROR_IMAGE, e.what(), nullptr, 0);
  } catch (const LaunchError& e) {
    record(KJIT_ERROR_LAUNCH, e.what(), nullptr, 0);
  } catch (const std::bad_alloc&) {
    record(KJIT_ERROR_OUT_OF_MEMORY, "out of memory", nullptr, 0);
  } catch (const std::exception& e) {
    record(KJIT_ERROR_OTHER, e.what(), nullptr, 0);
  } catch (...) {
    record(KJIT_ERROR_OTHER, "an unknown exception", nullptr, 0);
  }
  return t_last.status;
}

} // namespace kjit::capi

extern "C" {

const char* kjit_status_name(kjit_status status)
{
  switch (status) {
  case KJIT_OK: return "KJIT_OK";
  case KJIT_ERROR_INVALID_ARGUMENT: return "KJIT_ERROR_INVALID_ARGUMENT";
  case KJIT_ERROR_OUT_OF_MEMORY: return "KJIT_ERROR_OUT_OF_MEMORY";
  case KJIT_ERROR_NOT_FOUND: return "KJIT_ERROR_NOT_FOUND";
  case KJIT_ERROR_COMPILE: return "KJIT_ERROR_COMPILE";
  case KJIT_ERROR_OPTION: return "KJIT_ERROR_OPTION";
  case KJIT_ERROR_ARCH: return "KJIT_ERROR_ARCH";
  case KJIT_ERROR_TOOLCHAIN: return "KJIT_ERROR_TOOLCHAIN";
  case KJIT_ERROR_CONFIG: return "KJIT_ERROR_CONFIG";
  case KJIT_ERROR_STORE: return "KJIT_ERROR_STORE";
  case KJIT_ERROR_BUNDLE: return "KJIT_ERROR_BUNDLE";
  case KJIT_ERROR_NO_GPU: return "KJIT_ERROR_NO_GPU";
  case KJIT_ERROR_DRIVER: return "KJIT_ERROR_DRIVER";
  case KJIT_ERROR_IMAGE: return "KJIT_ERROR_IMAGE";
  case KJIT_ERROR_LAUNCH: return "KJIT_ERROR_LAUNCH";
  case KJIT_ERROR_OTHER: return "KJIT_ERROR_OTHER";
  }
  return "KJIT_ERROR_UNKNOWN";
}

const char* kjit_last_error_message(void)
{
  using kjit::capi::t_last;
  return t_last.out_of_memory ? "KJIT_ERROR_OUT_OF_MEMORY: out of memory (while reporting an error)"
                              : t_last.message.c_str();
}

kjit_status kjit_last_error_status(void)
{
  return kjit::capi::t_last.status;
}

const char* kjit_last_error_log(void)
{
  return kjit::capi::t_last.log.c_str();
}

int kjit_last_error_code(void)
{
  return kjit::capi::t_last.code;
}

const char* kjit_version(void)
{
  return kjit::version();
}

} // extern "C"
