// The CUDA driver, loaded lazily with dlopen: is it usable here, and if not, why.
#pragma once

#include <kjit/arch.hpp>

#include <functional>
#include <string>
#include <vector>

namespace kjit {

// Why the driver is not usable. no_driver and no_device mean "this machine has no GPU";
// unusable means a driver is there but kjit cannot use it (too old, entry points missing,
// cuInit failing): an installation problem to report, not a machine without a GPU.
enum class DriverProblem { none, no_driver, no_device, unusable };

struct DriverStatus {
  bool available = false;  // a driver and at least one device are usable
  DriverProblem problem = DriverProblem::no_driver;
  std::string reason;      // why not, when !available
  int driver_version = 0;  // e.g. 13000; set whenever libcuda.so.1 loaded and reported it
  int device_count = 0;
};

// Loads libcuda.so.1 on first use (the dynamic loader's search: LD_LIBRARY_PATH, then the
// system's folders) and calls cuInit. Never throws; cached after the first call; thread-safe.
// libcuda is never unloaded. In a fork()ed child of a process whose driver was initialized: not
// available (unusable), since CUDA does not support fork() after cuInit.
const DriverStatus& driver_status();

// The compute capability (major*10+minor) of device ordinal `device`. Throws CudaError when
// there is no usable driver or no such device.
int device_compute_capability(int device = 0);

// The device ordinal of the calling thread's current context, or 0 when it has none (as the
// CUDA runtime's current device defaults to 0). Throws CudaError without a usable driver.
int current_device();

// The arch `auto` means: the current device's (see current_device()) sm_<cc>. `supported` (NVRTC's
// list, see supported_archs()) is asked only for a device NVRTC 13.0 does not know: newer than every
// supported arch it gives compute_<newest> (PTX the driver JIT-compiles, warned once), between two
// it gives the nearest older one. Throws CudaError without a driver, ArchError for a too-old device.
Arch current_device_arch(const std::function<std::vector<int>()>& supported);

} // namespace kjit
