// The fake libcuda.so.1's test interface, found with dlsym in the copy kjit loaded.
#pragma once

#include <string>

namespace kjit::test {

struct FakeDriver {
  const char* (*log)() = nullptr;
  void (*clear_log)() = nullptr;
  const char* (*violations)() = nullptr;
  const char* (*last_params)() = nullptr;
  int (*primary_retains)(int) = nullptr;
  int (*loaded_modules)() = nullptr;
  long (*pushes)() = nullptr;
  long (*pops)() = nullptr;
  int (*stack_depth)() = nullptr;
  void* (*create_context)(int) = nullptr;
  void (*destroy_context)(void*) = nullptr;
  void (*set_current)(void*) = nullptr;
  // cuDevicePrimaryCtxRetain/Release as the CUDA runtime calls them (by CUdevice handle).
  int (*retain_primary)(void** context, int device_handle) = nullptr;
  int (*release_primary)(int device_handle) = nullptr;

  // How many recorded calls contain `text`.
  int count(const std::string& text) const;
};

// The fake loaded by kjit::driver_status() (throws if kjit loaded something else).
const FakeDriver& fake();

} // namespace kjit::test
