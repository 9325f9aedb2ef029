// The fake libcuda.so.1's test interface, found with dlsym in the copy kjit loaded.
#pragma once

#include "../unit/fixture.hpp"

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
  void* (*create_stream)() = nullptr;  // a CUstream the fake knows (as cuStreamCreate gives)
  // Hold the next module loads inside cuModuleLoadDataEx (as a long JIT), wait for one (false when
  // released first: the loading thread releases when its load returns), release.
  void (*hold_loads)() = nullptr;
  bool (*wait_load_held)() = nullptr;
  void (*release_loads)() = nullptr;
  // cuDevicePrimaryCtxRetain/Release as the CUDA runtime calls them (by CUdevice handle).
  int (*retain_primary)(void** context, int device_handle) = nullptr;
  int (*release_primary)(int device_handle) = nullptr;

  // How many recorded calls contain `text`.
  int count(const std::string& text) const;
};

// The fake loaded by kjit::driver_status() (throws if kjit loaded something else).
const FakeDriver& fake();

// A test's own cache (as kjit::option::cache_dir) and an empty call record; requires the driver.
struct DriverFixture : CacheFixture {
  DriverFixture();
  ~DriverFixture();
  // Every push popped and no contract violated.
  void check_clean() const;
};

} // namespace kjit::test
