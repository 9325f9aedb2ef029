// The C API's one boundary (src/capi/status.cpp): each C++ error kind becomes its status, with its
// message, log and code for kjit_last_error_*(), including those the C test can't provoke through
// the calls (out of memory, a toolchain failure, an image, a bundle, a non-std exception). Here
// there is no usable driver (no libcuda.so.1), so a CudaError is KJIT_ERROR_NO_GPU.
#include "capi/status.hpp"

#include <kjit/driver.hpp>
#include <kjit/error.hpp>

#include <cstdio>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

namespace {

int failures = 0;

template <typename Throw>
void expect(Throw&& throw_it, kjit_status status, const char* message, int code = 0, const char* log = "")
{
  const kjit_status got = kjit::capi::guarded([&] { throw_it(); });
  const std::string expected_message = std::string(kjit_status_name(status)) + ": " + message;
  if (got != status || kjit_last_error_status() != status || expected_message != kjit_last_error_message() ||
      kjit_last_error_code() != code || std::strcmp(kjit_last_error_log(), log) != 0) {
    std::fprintf(stderr, "expected %s '%s' (code %d, log '%s'); got %s '%s' (code %d, log '%s')\n",
                 kjit_status_name(status), expected_message.c_str(), code, log, kjit_status_name(got),
                 kjit_last_error_message(), kjit_last_error_code(), kjit_last_error_log());
    ++failures;
  }
}

} // namespace

int main()
{
  using namespace kjit;
  expect([] { throw CompileError("p.cu", "sm_90", "p.cu(1): error: x", {"-DN=1"}); }, KJIT_ERROR_COMPILE,
         "compiling p.cu for sm_90 failed:\np.cu(1): error: x", 0, "p.cu(1): error: x");
  expect([] { throw OptionError("bad option"); }, KJIT_ERROR_OPTION, "bad option");
  expect([] { throw ArchError("bad arch"); }, KJIT_ERROR_ARCH, "bad arch");
  expect([] { throw ToolchainError("no NVRTC", 7); }, KJIT_ERROR_TOOLCHAIN, "no NVRTC", 7);
  expect([] { throw ConfigError("verbose", "not a boolean"); }, KJIT_ERROR_CONFIG, "verbose: not a boolean");
  expect([] { throw StoreError("disk full", 28); }, KJIT_ERROR_STORE, "disk full", 28);
  expect([] { throw BundleError("damaged", "b.kjit"); }, KJIT_ERROR_BUNDLE, "damaged");
  expect([] { throw ImageError("not a cubin", "image"); }, KJIT_ERROR_IMAGE, "not a cubin");
  expect([] { throw LaunchError("3 arguments for 4", "k", 3, 4, 3); }, KJIT_ERROR_LAUNCH, "3 arguments for 4");
  expect([] { throw GlobalError("size", "g", 4, 8); }, KJIT_ERROR_OTHER, "size");
  expect([] { throw Error("plain"); }, KJIT_ERROR_OTHER, "plain");
  expect([] { throw std::bad_alloc(); }, KJIT_ERROR_OUT_OF_MEMORY, "out of memory");
  expect([] { throw std::length_error("too long"); }, KJIT_ERROR_OTHER, "too long");
  expect([] { throw 42; }, KJIT_ERROR_OTHER, "an unknown exception");
  if (!driver_status().available) {
    expect([] { throw CudaError("no driver", 100); }, KJIT_ERROR_NO_GPU, "no driver", 100);
  }
  // A call that succeeds leaves the last failure as it was.
  const kjit_status before = kjit_last_error_status();
  if (kjit::capi::guarded([] {}) != KJIT_OK || kjit_last_error_status() != before || before == KJIT_OK) {
    std::fprintf(stderr, "a successful call changed the last error\n");
    ++failures;
  }
  return failures == 0 ? 0 : 1;
}
