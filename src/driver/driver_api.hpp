// The CUDA driver's entry points, fetched with cuGetProcAddress after dlopen("libcuda.so.1").
#pragma once

#include <cuda.h>

namespace kjit::driver {

struct DriverApi {
  decltype(&::cuInit) init;
  decltype(&::cuDriverGetVersion) driver_get_version;
  decltype(&::cuDeviceGetCount) device_get_count;
  decltype(&::cuDeviceGet) device_get;
  decltype(&::cuDeviceGetAttribute) device_get_attribute;
  decltype(&::cuDeviceGetName) device_get_name;
  decltype(&::cuGetErrorName) get_error_name;
  decltype(&::cuGetErrorString) get_error_string;
};

// The driver's entry points once cuInit succeeded, or nullptr (see kjit::driver_status() for why).
const DriverApi* driver_api();

// "CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)" for `result`.
const char* describe(CUresult result);

} // namespace kjit::driver
