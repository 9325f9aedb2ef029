// Contexts: primary or wrapped, one State per CUcontext in the process, each with its modules.
#include "driver/module_state.hpp"

#include "driver/device_arch.hpp"

#include <kjit/config.hpp>
#include <kjit/driver.hpp>
#include <kjit/error.hpp>

#include <tuple>

namespace kjit {

namespace {

std::mutex g_registry_mutex;
std::map<CUcontext, std::weak_ptr<Context::State>> g_registry;  // entries leave with their State

std::string device_text(int device)
{
  return "device " + std::to_string(device);
}

// The State registered for `context`, or a new one made by `make` and registered. Takes the lock.
template <typename Make>
std::shared_ptr<Context::State> find_or_register(CUcontext context, Make&& make)
{
  std::lock_guard lock(g_registry_mutex);
  std::weak_ptr<Context::State>& entry = g_registry[context];
  if (auto existing = entry.lock()) {
    return existing;
  }
  std::shared_ptr<Context::State> state = make();
  entry = state;
  return state;
}

std::shared_ptr<Context::State> registered(CUcontext context)
{
  std::lock_guard lock(g_registry_mutex);
  const auto it = g_registry.find(context);
  return it == g_registry.end() ? nullptr : it->second.lock();
}

// A State holding one retain of `device`'s primary context `context`.
std::shared_ptr<Context::State> primary_state(CUcontext context, int ordinal, CUdevice handle)
{
  const driver::DriverApi& api = driver::require_driver();
  bool made = false;
  auto state = find_or_register(context, [&] {
    made = true;
    auto fresh = std::make_shared<Context::State>();
    fresh->context = context;
    fresh->device = ordinal;
    fresh->device_handle = handle;
    fresh->primary = true;
    return fresh;
  });
  if (!made) {
    std::ignore = api.primary_ctx_release(handle);  // the existing State holds one retain already
  }
  return state;
}

} // namespace

Context::State::~State()
{
  modules.clear();  // unload while the context is still retained
  if (primary) {
    if (const driver::DriverApi* api = driver::cleanup_api()) {
      std::ignore = driver::note_cleanup(api->primary_ctx_release(device_handle));
    }
  }
  std::lock_guard lock(g_registry_mutex);
  if (const auto it = g_registry.find(context); it != g_registry.end() && it->second.expired()) {
    g_registry.erase(it);
  }
}

Context Context::primary(int device)
{
  const driver::DriverApi& api = driver::require_driver();
  CUdevice handle{};
  driver::check(api.device_get(&handle, device), [&] { return "cuDeviceGet(" + std::to_string(device) + ")"; });
  CUcontext context = nullptr;
  driver::check(api.primary_ctx_retain(&context, handle),
                [&] { return "cuDevicePrimaryCtxRetain on " + device_text(device); });
  return Context(primary_state(context, device, handle));
}

Context Context::current()
{
  const driver::DriverApi& api = driver::require_driver();
  CUcontext context = nullptr;
  driver::check(api.ctx_get_current(&context), [] { return std::string("cuCtxGetCurrent"); });
  if (context == nullptr) {
    return primary(0);
  }
  if (auto existing = registered(context)) {
    return Context(existing);
  }
  CUdevice handle{};
  driver::check(api.ctx_get_device(&handle, context), [] { return std::string("cuCtxGetDevice"); });
  const int ordinal = driver::ordinal_of(api, handle);
  // The CUDA runtime's contexts are primary contexts: retain it so it outlives the runtime's (or
  // another library's) release while kjit's modules live (a reset destroys it all the same: see
  // docs/embedding.md). Retaining an inactive primary context would create one, so ask first.
  unsigned flags = 0;
  int active = 0;
  driver::check(api.primary_ctx_get_state(handle, &flags, &active),
                [&] { return "cuDevicePrimaryCtxGetState on " + device_text(ordinal); });
  if (active != 0) {
    CUcontext primary_context = nullptr;
    driver::check(api.primary_ctx_retain(&primary_context, handle),
                  [&] { return "cuDevicePrimaryCtxRetain on " + device_text(ordinal); });
    if (primary_context == context) {
      return Context(primary_state(context, ordinal, handle));
    }
    std::ignore = api.primary_ctx_release(handle);
  }
  return wrap(context, ordinal);
}

Context Context::wrap(void* cu_context, int device)
{
  const auto context = static_cast<CUcontext>(cu_context);
  const driver::DriverApi& api = driver::require_driver();
  if (context == nullptr) {
    throw CudaError("Context::wrap: a null CUcontext (use Context::current() or Context::primary())",
                    CUDA_ERROR_INVALID_CONTEXT);
  }
  CUdevice handle{};
  driver::check(api.device_get(&handle, device), [&] { return "cuDeviceGet(" + std::to_string(device) + ")"; });
  // The device decides the arch and the limits kjit uses: it must be the context's own.
  CUdevice own{};
  driver::check(api.ctx_get_device(&own, context), [] { return std::string("cuCtxGetDevice of the wrapped context"); });
  if (own != handle) {
    throw CudaError("Context::wrap: the context is on device " + std::to_string(driver::ordinal_of(api, own)) +
                      ", not on " + device_text(device),
                    CUDA_ERROR_INVALID_DEVICE);
  }
  return Context(find_or_register(context, [&] {
    auto state = std::make_shared<State>();
    state->context = context;
    state->device = device;
    state->device_handle = handle;
    return state;
  }));
}

void* Context::handle() const noexcept
{
  return m_state->context;
}

int Context::device() const noexcept
{
  return m_state->device;
}

int Context::compute_capability() const
{
  return device_compute_capability(m_state->device);
}

std::string Context::device_name() const
{
  const driver::DriverApi& api = driver::require_driver();
  char name[256] = {};
  CUdevice handle = 0;
  driver::check(api.device_get(&handle, m_state->device), [&] { return "cuDeviceGet on " + device_text(device()); });
  driver::check(api.device_get_name(name, sizeof name, handle), [&] { return "cuDeviceGetName"; });
  return name;
}

std::size_t Context::loaded_modules() const
{
  driver::refuse_in_forked_child();  // the lock may be a copy a parent's thread held (loading)
  std::lock_guard lock(m_state->mutex);
  return m_state->modules.size();
}

} // namespace kjit
