// Lazy driver loading: dlopen("libcuda.so.1"), cuGetProcAddress for every entry point, cuInit.
#include "driver/driver_api.hpp"

#include "util/dynamic_library.hpp"

#include <kjit/driver.hpp>
#include <kjit/error.hpp>

#include <dlfcn.h>
#include <pthread.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>

namespace kjit::driver {

namespace {

using GetProcAddress = PFN_cuGetProcAddress_v12000;

// Set once the process is exiting (see cleanup_api()).
std::atomic<bool> g_exiting{false};

void note_exit()
{
  g_exiting.store(true, std::memory_order_release);
}

// Set in a fork()ed child of a process that began to load the driver. CUDA duplicates none of its
// state or threads at fork(): any driver call in the child is undefined (NVIDIA: the child must
// exec first), so the child never calls it: destructors leave their objects alone, and calls
// that need the driver throw. A fork during the load (cuInit takes seconds on a GPU) counts too:
// glibc restarts a pthread_once that fork() interrupted, which would load again in the child.
std::atomic<bool> g_forked{false};

void note_fork()
{
  g_forked.store(true, std::memory_order_release);
}

constexpr const char* k_forked_reason =
  "the CUDA driver was loaded before this process was fork()ed: a child cannot use it (CUDA does not "
  "support fork() after cuInit; exec a new program, or use the GPU in the parent)";

struct State {
  std::optional<util::DynamicLibrary> library;  // never closed: see state()
  DriverApi api{};
  DriverStatus status;
};

// Fetches entry points through cuGetProcAddress, each at the version of its function type,
// collecting the names it could not find.
class ProcBinder {
public:
  explicit ProcBinder(GetProcAddress get) : m_get(get) {}

  template <typename Fn>
  ProcBinder& operator()(Fn*& out, const char* name, int version)
  {
    void* address = nullptr;
    CUdriverProcAddressQueryResult found{};
    if (m_get(name, &address, version, CU_GET_PROC_ADDRESS_DEFAULT, &found) != CUDA_SUCCESS || address == nullptr) {
      m_missing += (m_missing.empty() ? "" : ", ") + std::string(name);
      address = nullptr;
    }
    out = reinterpret_cast<Fn*>(address);
    return *this;
  }

  const std::string& missing() const noexcept { return m_missing; }

private:
  GetProcAddress m_get;
  std::string m_missing;
};

std::string version_text(int version)
{
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10) + " (" + std::to_string(version) +
         ")";
}

void load(State& state)
{
  DriverStatus& status = state.status;
  if (g_forked.load(std::memory_order_acquire)) {  // a load the parent began when it forked
    status.problem = DriverProblem::unusable;
    status.reason = k_forked_reason;
    return;
  }
  // Before the driver is touched, so that a child forked from here on never touches it.
  std::ignore = ::pthread_atfork(nullptr, nullptr, note_fork);
  std::string error;
  state.library = util::DynamicLibrary::open("libcuda.so.1", RTLD_LOCAL, error);
  if (!state.library) {
    status.problem = DriverProblem::no_driver;
    status.reason = "no CUDA driver: cannot load libcuda.so.1 (" + error + ")";
    return;
  }
  status.problem = DriverProblem::unusable;
  GetProcAddress get = nullptr;
  if (!state.library->bind(get, "cuGetProcAddress_v2")) {
    status.reason = "libcuda.so.1 has no cuGetProcAddress_v2 (a driver older than CUDA 12; kjit needs " +
                    version_text(k_min_driver_version) + " or newer)";
    return;
  }
  DriverApi& api = state.api;
  ProcBinder bind(get);
  bind(api.driver_get_version, "cuDriverGetVersion", 2020);
  if (api.driver_get_version == nullptr || api.driver_get_version(&status.driver_version) != CUDA_SUCCESS) {
    status.reason = "libcuda.so.1 cannot report its version (cuDriverGetVersion)";
    return;
  }
  if (status.driver_version < k_min_driver_version) {
    status.reason = "the CUDA driver is version " + version_text(status.driver_version) + "; kjit needs " +
                    version_text(k_min_driver_version) + " or newer";
    return;
  }
#define KJIT_DRIVER_BIND(member, symbol, version) bind(api.member, #symbol, version);
  KJIT_DRIVER_ENTRY_POINTS(KJIT_DRIVER_BIND)
#undef KJIT_DRIVER_BIND
  if (!bind.missing().empty()) {
    status.reason = "the CUDA driver " + version_text(status.driver_version) +
                    " lacks entry points kjit needs: " + bind.missing();
    return;
  }
  if (const CUresult result = api.init(0); result != CUDA_SUCCESS) {
    status.reason = std::string("cuInit failed: ") + describe_with(api, result);
    if (result == CUDA_ERROR_NO_DEVICE) {
      status.problem = DriverProblem::no_device;
    }
    return;
  }
  // Registered after the driver registered its own exit-time shutdown (when it loaded or
  // initialized), so it runs before that: objects destroyed later never reach the driver.
  std::ignore = std::atexit(note_exit);
  if (const CUresult result = api.device_get_count(&status.device_count); result != CUDA_SUCCESS) {
    status.reason = std::string("cuDeviceGetCount failed: ") + describe_with(api, result);
    return;
  }
  if (status.device_count == 0) {
    status.problem = DriverProblem::no_device;
    status.reason = "the driver sees no CUDA device";
    return;
  }
  status.problem = DriverProblem::none;
  status.available = true;
}

} // namespace

namespace {

// Never destroyed, so libcuda is never dlclose()d: Kernels, Modules and DeviceBuffers held in
// globals are destroyed at exit after any function-local static, and still call the driver.
State& state()
{
  static State* const instance = new State;
  static std::once_flag once;
  std::call_once(once, [] { load(*instance); });
  return *instance;
}

} // namespace

const DriverApi* driver_api()
{
  State& s = state();
  return s.status.available && !g_forked.load(std::memory_order_acquire) ? &s.api : nullptr;
}

const DriverApi* cleanup_api()
{
  return g_exiting.load(std::memory_order_acquire) ? nullptr : driver_api();
}

CUresult note_cleanup(CUresult result)
{
  if (result == CUDA_ERROR_DEINITIALIZED) {
    note_exit();
  }
  return result;
}

const char* describe(CUresult result)
{
  return describe_with(state().api, result);
}

const char* describe_with(const DriverApi& api, CUresult result)
{
  thread_local std::string text;
  const char* name = nullptr;
  const char* message = nullptr;
  if (api.get_error_name != nullptr && api.get_error_string != nullptr) {
    std::ignore = api.get_error_name(result, &name);
    std::ignore = api.get_error_string(result, &message);
  }
  text = std::string(name != nullptr ? name : "CUresult " + std::to_string(result)) +
         (message != nullptr ? std::string(" (") + message + ")" : "");
  return text.c_str();
}

namespace {

// The error for a driver kjit can't call, its status's reason after `prefix`:
// CUDA_ERROR_NOT_INITIALIZED in a fork()ed child (the parent's driver), CUDA_ERROR_NO_DEVICE
// otherwise (no driver, or one too old).
[[noreturn]] void throw_unavailable(const std::string& prefix)
{
  const std::string& reason = driver_status().reason;
  throw CudaError(prefix + reason, reason == k_forked_reason ? CUDA_ERROR_NOT_INITIALIZED : CUDA_ERROR_NO_DEVICE);
}

} // namespace

const DriverApi& require_driver()
{
  const DriverApi* api = driver_api();
  if (api != nullptr && g_exiting.load(std::memory_order_acquire)) {
    throw CudaError("the process is exiting: the CUDA driver shuts down", CUDA_ERROR_DEINITIALIZED);
  }
  if (api == nullptr) {
    throw_unavailable("");
  }
  return *api;
}

void refuse_in_forked_child()
{
  if (g_forked.load(std::memory_order_acquire)) {
    throw CudaError(k_forked_reason, CUDA_ERROR_NOT_INITIALIZED);
  }
}

void throw_cuda_error(CUresult result, const std::string& what)
{
  throw CudaError(what + ": " + describe(result), result);
}

ScopedContext::ScopedContext(CUcontext context, OnFailure on_failure)
{
  if (on_failure == OnFailure::ignore) {
    const DriverApi* api = cleanup_api();
    CUcontext current = nullptr;
    if (api == nullptr || note_cleanup(api->ctx_get_current(&current)) != CUDA_SUCCESS) {
      return;
    }
    m_api = api;
    m_pushed = current != context && api->ctx_push_current(context) == CUDA_SUCCESS;
    m_active = current == context || m_pushed;
    return;
  }
  const DriverApi& api = require_driver();
  m_api = &api;
  CUcontext current = nullptr;
  check(api.ctx_get_current(&current), [] { return std::string("cuCtxGetCurrent"); });
  if (current != context) {
    check(api.ctx_push_current(context), [] { return std::string("cuCtxPushCurrent"); });
    m_pushed = true;
  }
  m_active = true;
}

ScopedContext::~ScopedContext()
{
  if (m_pushed) {
    CUcontext popped = nullptr;
    std::ignore = m_api->ctx_pop_current(&popped);
  }
}

} // namespace kjit::driver

namespace kjit {

const DriverStatus& driver_status()
{
  const DriverStatus& status = driver::state().status;
  if (!driver::g_forked.load(std::memory_order_acquire) || !status.available) {
    return status;  // a child of a process without a driver keeps its reason
  }
  // A fork()ed child: the parent's driver, which the child must not call (see note_fork).
  static const DriverStatus forked = [&] {
    DriverStatus child = status;
    child.available = false;
    child.problem = DriverProblem::unusable;
    child.reason = driver::k_forked_reason;
    return child;
  }();
  return forked;
}

int device_compute_capability(int device)
{
  const driver::DriverApi* api = driver::driver_api();
  if (api == nullptr) {
    driver::throw_unavailable("cannot resolve arch 'auto': ");
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
