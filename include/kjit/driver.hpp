// The CUDA driver, loaded lazily with dlopen: is it usable here, and if not, why.
#pragma once

#include <string>

namespace kjit {

struct DriverStatus {
  bool available = false;  // a driver and at least one device are usable
  std::string reason;      // why not, when !available
  int driver_version = 0;  // e.g. 13000
  int device_count = 0;
};

// Loads libcuda.so.1 on first use and calls cuInit. Never throws; cached after the first call.
const DriverStatus& driver_status();

// The compute capability (major*10+minor) of `device`. Throws CudaError when no driver/device.
int device_compute_capability(int device = 0);

} // namespace kjit
