// The CUDA driver's entry points, fetched with cuGetProcAddress after dlopen("libcuda.so.1").
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>

#include <string>

namespace kjit::driver {

// Every entry point kjit calls, with the version it is requested at: the member's type is
// cudaTypedefs.h's PFN_<symbol>_v<version>, so each call is checked against the ABI that
// cuGetProcAddress returns for that version (cuCtxSynchronize at 13000 takes a CUcontext).
#define KJIT_DRIVER_ENTRY_POINTS(X)                                                        \
  X(init, cuInit, 2000)                                                                    \
  X(device_get_count, cuDeviceGetCount, 2000)                                              \
  X(device_get, cuDeviceGet, 2000)                                                         \
  X(device_get_attribute, cuDeviceGetAttribute, 2000)                                      \
  X(device_get_name, cuDeviceGetName, 2000)                                                \
  X(get_error_name, cuGetErrorName, 6000)                                                  \
  X(get_error_string, cuGetErrorString, 6000)                                              \
  X(primary_ctx_retain, cuDevicePrimaryCtxRetain, 7000)                                    \
  X(primary_ctx_release, cuDevicePrimaryCtxRelease, 11000)                                 \
  X(primary_ctx_get_state, cuDevicePrimaryCtxGetState, 7000)                               \
  X(ctx_get_current, cuCtxGetCurrent, 4000)                                                \
  X(ctx_get_device, cuCtxGetDevice, 13000)                                                 \
  X(ctx_push_current, cuCtxPushCurrent, 4000)                                              \
  X(ctx_pop_current, cuCtxPopCurrent, 4000)                                                \
  X(ctx_synchronize, cuCtxSynchronize, 13000)                                              \
  X(module_load_data_ex, cuModuleLoadDataEx, 2010)                                         \
  X(module_unload, cuModuleUnload, 2000)                                                   \
  X(module_get_function, cuModuleGetFunction, 2000)                                        \
  X(module_get_global, cuModuleGetGlobal, 3020)                                            \
  X(func_get_attribute, cuFuncGetAttribute, 2020)                                          \
  X(func_set_attribute, cuFuncSetAttribute, 9000)                                          \
  X(launch_kernel, cuLaunchKernel, 4000)                                                   \
  X(launch_kernel_ex, cuLaunchKernelEx, 11060)                                             \
  X(occupancy_max_potential_block_size, cuOccupancyMaxPotentialBlockSize, 6050)            \
  X(occupancy_max_active_blocks, cuOccupancyMaxActiveBlocksPerMultiprocessor, 6050)        \
  X(occupancy_available_dynamic_smem, cuOccupancyAvailableDynamicSMemPerBlock, 10020)      \
  X(occupancy_max_active_clusters, cuOccupancyMaxActiveClusters, 11070)                    \
  X(mem_alloc, cuMemAlloc, 3020)                                                           \
  X(mem_free, cuMemFree, 3020)                                                             \
  X(memcpy_htod, cuMemcpyHtoD, 3020)                                                       \
  X(memcpy_dtoh, cuMemcpyDtoH, 3020)                                                       \
  X(stream_create, cuStreamCreate, 2000)                                                   \
  X(stream_destroy, cuStreamDestroy, 4000)                                                 \
  X(stream_synchronize, cuStreamSynchronize, 2000)                                         \
  X(event_create, cuEventCreate, 2000)                                                     \
  X(event_destroy, cuEventDestroy, 4000)                                                   \
  X(event_record, cuEventRecord, 2000)                                                     \
  X(event_synchronize, cuEventSynchronize, 2000)                                           \
  X(event_elapsed_time, cuEventElapsedTime, 12080)

// The oldest driver kjit runs on: the ABI of the entry points above as of CUDA 13.0.
constexpr int k_min_driver_version = 13000;

struct DriverApi {
  PFN_cuDriverGetVersion_v2020 driver_get_version = nullptr;  // bound first, to check the version
#define KJIT_DRIVER_MEMBER(member, symbol, version) PFN_##symbol##_v##version member = nullptr;
  KJIT_DRIVER_ENTRY_POINTS(KJIT_DRIVER_MEMBER)
#undef KJIT_DRIVER_MEMBER
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
  // go on without it (never calling the driver once the process is exiting: see cleanup_api).
  enum class OnFailure { throw_error, ignore };
  explicit ScopedContext(CUcontext context, OnFailure on_failure = OnFailure::throw_error);
  ~ScopedContext();
  ScopedContext(const ScopedContext&) = delete;
  ScopedContext& operator=(const ScopedContext&) = delete;

  // True when the context is current for this scope (always so in throw_error mode).
  bool active() const noexcept { return m_active; }

private:
  const DriverApi* m_api = nullptr;  // the one that pushed, to pop with
  bool m_pushed = false;
  bool m_active = false;
};

// The driver's entry points once cuInit succeeded, or nullptr (see kjit::driver_status() for why).
const DriverApi* driver_api();

// Throws CudaError (CUDA_ERROR_NOT_INITIALIZED) in a fork()ed child of a process that loaded the
// driver: for calls that need no driver but a lock a parent's thread may have held at fork().
void refuse_in_forked_child();

// For destructors: the driver's entry points, or nullptr once the process is exiting. The driver
// shuts itself down during exit (CUDA_ERROR_DEINITIALIZED after that) before the globals built
// before it loaded are destroyed; it frees their modules and memory itself, so they leave it alone.
const DriverApi* cleanup_api();

// Notes a cleanup call's result: CUDA_ERROR_DEINITIALIZED says the driver has shut down, and no
// later cleanup calls it. Returns `result`.
CUresult note_cleanup(CUresult result);

// "CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)" for `result`.
const char* describe(CUresult result);
// The same with `api`'s error functions (while the driver is being loaded).
const char* describe_with(const DriverApi& api, CUresult result);

} // namespace kjit::driver
