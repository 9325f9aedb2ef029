// The CUDA driver's entry points, fetched with cuGetProcAddress after dlopen("libcuda.so.1").
#pragma once

#include <cuda.h>

#include <string>

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
  decltype(&::cuDevicePrimaryCtxRetain) primary_ctx_retain;
  decltype(&::cuDevicePrimaryCtxRelease) primary_ctx_release;
  decltype(&::cuCtxGetCurrent) ctx_get_current;
  decltype(&::cuCtxGetDevice) ctx_get_device;
  decltype(&::cuCtxPushCurrent) ctx_push_current;
  decltype(&::cuCtxPopCurrent) ctx_pop_current;
  decltype(&::cuCtxSynchronize) ctx_synchronize;
  decltype(&::cuModuleLoadData) module_load_data;
  decltype(&::cuModuleUnload) module_unload;
  decltype(&::cuModuleGetFunction) module_get_function;
  decltype(&::cuLaunchKernel) launch_kernel;
  decltype(&::cuOccupancyMaxPotentialBlockSize) occupancy_max_potential_block_size;
  decltype(&::cuOccupancyMaxActiveBlocksPerMultiprocessor) occupancy_max_active_blocks;
  decltype(&::cuMemAlloc) mem_alloc;
  decltype(&::cuMemFree) mem_free;
  decltype(&::cuMemcpyHtoD) memcpy_htod;
  decltype(&::cuMemcpyDtoH) memcpy_dtoh;
};

// The driver's entry points, or CudaError saying why there is no usable driver.
const DriverApi& require_driver();

[[noreturn]] void throw_cuda_error(CUresult result, const std::string& what);

// Throws CudaError for a failed driver call; `what` is called only on failure to name the
// call and the objects involved (program, kernel, device).
template <typename What>
void check(CUresult result, What&& what)
{
  if (result != CUDA_SUCCESS) {
    throw_cuda_error(result, what());
  }
}

// Makes a context current on this thread for a scope, restoring the previous one after.
class ScopedContext {
public:
  // What to do when the context can't be made current: throw CudaError, or (in destructors)
  // go on without it.
  enum class OnFailure { throw_error, ignore };
  explicit ScopedContext(CUcontext context, OnFailure on_failure = OnFailure::throw_error);
  ~ScopedContext();
  ScopedContext(const ScopedContext&) = delete;
  ScopedContext& operator=(const ScopedContext&) = delete;

private:
  bool m_pushed = false;
};

// The driver's entry points once cuInit succeeded, or nullptr (see kjit::driver_status() for why).
const DriverApi* driver_api();

// "CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)" for `result`.
const char* describe(CUresult result);

} // namespace kjit::driver
