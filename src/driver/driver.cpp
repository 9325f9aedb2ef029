// Lazy driver loading: dlopen("libcuda.so.1"), cuGetProcAddress for every entry point, cuInit.
#include "driver/driver_api.hpp"

#include "util/dynamic_library.hpp"

#include <kjit/driver.hpp>
#include <kjit/error.hpp>

#include <dlfcn.h>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>

namespace kjit::driver {

namespace {

using GetProcAddress = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);

struct State {
  std::optional<util::DynamicLibrary> library;
  DriverApi api{};
  DriverStatus status;
};

// Fetches entry points through cuGetProcAddress, collecting the names it could not find.
class ProcBinder {
public:
  explicit ProcBinder(GetProcAddress get) : m_get(get) {}

  template <typename Fn>
  ProcBinder& operator()(Fn*& out, const char* name)
  {
    void* address = nullptr;
    CUdriverProcAddressQueryResult found{};
    if (m_get(name, &address, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &found) != CUDA_SUCCESS ||
        address == nullptr) {
      m_missing += (m_missing.empty() ? "" : ", ") + std::string(name);
    }
    out = reinterpret_cast<Fn*>(address);
    return *this;
  }

  const std::string& missing() const noexcept { return m_missing; }

private:
  GetProcAddress m_get;
  std::string m_missing;
};

void load(State& state)
{
  std::string error;
  state.library = util::DynamicLibrary::open("libcuda.so.1", RTLD_LOCAL, error);
  if (!state.library) {
    state.status.reason = "no CUDA driver: cannot load libcuda.so.1 (" + error + ")";
    return;
  }
  GetProcAddress get = nullptr;
  if (!state.library->bind(get, "cuGetProcAddress_v2")) {
    state.status.reason = "libcuda.so.1 has no cuGetProcAddress_v2 (driver older than CUDA 12)";
    return;
  }
  DriverApi& api = state.api;
  ProcBinder bind(get);
  bind(api.init, "cuInit")(api.driver_get_version, "cuDriverGetVersion")(api.device_get_count, "cuDeviceGetCount")(
    api.device_get, "cuDeviceGet")(api.device_get_attribute, "cuDeviceGetAttribute")(
    api.device_get_name, "cuDeviceGetName")(api.get_error_name, "cuGetErrorName")(
    api.get_error_string, "cuGetErrorString")(api.primary_ctx_retain, "cuDevicePrimaryCtxRetain")(
    api.primary_ctx_release, "cuDevicePrimaryCtxRelease")(api.ctx_get_current, "cuCtxGetCurrent")(
    api.ctx_get_device, "cuCtxGetDevice")(api.ctx_push_current, "cuCtxPushCurrent")(
    api.ctx_pop_current, "cuCtxPopCurrent")(api.ctx_synchronize, "cuCtxSynchronize")(
    api.module_load_data, "cuModuleLoadData")(api.module_unload, "cuModuleUnload")(
    api.module_get_function, "cuModuleGetFunction")(api.launch_kernel, "cuLaunchKernel")(
    api.occupancy_max_potential_block_size, "cuOccupancyMaxPotentialBlockSize")(
    api.occupancy_max_active_blocks, "cuOccupancyMaxActiveBlocksPerMultiprocessor")(api.mem_alloc, "cuMemAlloc")(
    api.mem_free, "cuMemFree")(api.memcpy_htod, "cuMemcpyHtoD")(api.memcpy_dtoh, "cuMemcpyDtoH");
  if (!bind.missing().empty()) {
    state.status.reason = "libcuda.so.1 lacks driver entry points kjit needs: " + bind.missing();
    return;
  }
  api.driver_get_version(&state.status.driver_version);
  if (const CUresult result = api.init(0); result != CUDA_SUCCESS) {
    state.status.reason = std::string("cuInit failed: ") + describe(result);
    return;
  }
  if (const CUresult result = api.device_get_count(&state.status.device_count); result != CUDA_SUCCESS) {
    state.status.reason = std::string("cuDeviceGetCount failed: ") + describe(result);
    return;
  }
  if (state.status.device_count == 0) {
    state.status.reason = "the driver sees no CUDA device";
    return;
  }
  state.status.available = true;
}

State& state()
{
  static State instance;
  static std::once_flag once;
  std::call_once(once, [] { load(instance); });
  return instance;
}

} // namespace

const DriverApi* driver_api()
{
  State& s = state();
  return s.status.available ? &s.api : nullptr;
}

const char* describe(CUresult result)
{
  thread_local std::string text;
  const char* name = nullptr;
  const char* message = nullptr;
  State& s = state();
  if (s.api.get_error_name != nullptr) {
    s.api.get_error_name(result, &name);
    s.api.get_error_string(result, &message);
  }
  text = std::string(name != nullptr ? name : "CUresult " + std::to_string(result)) +
         (message != nullptr ? std::string(" (") + message + ")" : "");
  return text.c_str();
}

const DriverApi& require_driver()
{
  const DriverApi* api = driver_api();
  if (api == nullptr) {
    throw CudaError(driver_status().reason, CUDA_ERROR_NO_DEVICE);
  }
  return *api;
}

void throw_cuda_error(CUresult result, const std::string& what)
{
  throw CudaError(what + ": " + describe(result), result);
}

ScopedContext::ScopedContext(CUcontext context, OnFailure on_failure)
{
  if (on_failure == OnFailure::ignore) {
    const DriverApi* api = driver_api();
    CUcontext current = nullptr;
    m_pushed = api != nullptr && api->ctx_get_current(&current) == CUDA_SUCCESS && current != context &&
               api->ctx_push_current(context) == CUDA_SUCCESS;
    return;
  }
  const DriverApi& api = require_driver();
  CUcontext current = nullptr;
  api.ctx_get_current(&current);
  if (current != context) {
    check(api.ctx_push_current(context), [] { return std::string("cuCtxPushCurrent"); });
    m_pushed = true;
  }
}

ScopedContext::~ScopedContext()
{
  if (m_pushed) {
    CUcontext popped = nullptr;
    std::ignore = driver_api()->ctx_pop_current(&popped);
  }
}

} // namespace kjit::driver

namespace kjit {

const DriverStatus& driver_status()
{
  return driver::state().status;
}

int device_compute_capability(int device)
{
  const driver::DriverApi* api = driver::driver_api();
  if (api == nullptr) {
    throw CudaError("cannot resolve arch 'auto': " + driver_status().reason, CUDA_ERROR_NO_DEVICE);
  }
  CUdevice handle = 0;
  if (const CUresult r = api->device_get(&handle, device); r != CUDA_SUCCESS) {
    throw CudaError("cuDeviceGet(" + std::to_string(device) + "): " + driver::describe(r), r);
  }
  int major = 0;
  int minor = 0;
  const CUresult r1 = api->device_get_attribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, handle);
  const CUresult r2 = api->device_get_attribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, handle);
  if (r1 != CUDA_SUCCESS || r2 != CUDA_SUCCESS) {
    throw CudaError("cannot read the compute capability of device " + std::to_string(device) + ": " +
                      driver::describe(r1 != CUDA_SUCCESS ? r1 : r2),
                    r1 != CUDA_SUCCESS ? r1 : r2);
  }
  return major * 10 + minor;
}

} // namespace kjit
