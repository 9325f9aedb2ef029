// Contexts: primary or wrapped, one State per CUcontext in the process, each with its modules.
#include "driver/module_state.hpp"

#include "config/log.hpp"

#include <kjit/config.hpp>
#include <kjit/driver.hpp>
#include <kjit/error.hpp>

#include <tuple>

namespace kjit {

namespace {

std::mutex g_registry_mutex;
std::map<CUcontext, std::weak_ptr<Context::State>> g_registry;

std::string device_text(int device)
{
  return "device " + std::to_string(device);
}

} // namespace

Context::State::~State()
{
  modules.clear();  // unload while the context is still retained
  if (primary) {
    if (const driver::DriverApi* api = driver::driver_api()) {
      std::ignore = api->primary_ctx_release(device);
    }
  }
}

Context Context::primary(int device)
{
  const driver::DriverApi& api = driver::require_driver();
  CUdevice handle = 0;
  driver::check(api.device_get(&handle, device), [&] { return "cuDeviceGet(" + std::to_string(device) + ")"; });
  CUcontext context = nullptr;
  driver::check(api.primary_ctx_retain(&context, handle),
                [&] { return "cuDevicePrimaryCtxRetain on " + device_text(device); });
  std::lock_guard lock(g_registry_mutex);
  if (auto existing = g_registry[context].lock()) {
    std::ignore = api.primary_ctx_release(handle);  // the existing State holds one retain already
    return Context(existing);
  }
  auto state = std::make_shared<State>();
  state->context = context;
  state->device = device;
  state->primary = true;
  g_registry[context] = state;
  return Context(state);
}

Context Context::current()
{
  const driver::DriverApi& api = driver::require_driver();
  CUcontext context = nullptr;
  if (api.ctx_get_current(&context) != CUDA_SUCCESS || context == nullptr) {
    return primary(0);
  }
  CUdevice device = 0;
  driver::check(api.ctx_get_device(&device), [] { return std::string("cuCtxGetDevice"); });
  {
    std::lock_guard lock(g_registry_mutex);
    if (auto existing = g_registry[context].lock()) {
      return Context(existing);
    }
  }
  return wrap(context, device);
}

Context Context::wrap(void* cu_context, int device)
{
  const auto context = static_cast<CUcontext>(cu_context);
  std::lock_guard lock(g_registry_mutex);
  if (auto existing = g_registry[context].lock()) {
    return Context(existing);
  }
  auto state = std::make_shared<State>();
  state->context = context;
  state->device = device;
  g_registry[context] = state;
  return Context(state);
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
  std::lock_guard lock(m_state->mutex);
  return m_state->modules.size();
}

Module Context::load(const PreparedProgram& prepared, const Binary& binary) const
{
  const Config config = current_config();
  const bool use_ptx = binary.cubin.empty() || config.force_ptx;
  const std::string key = prepared.key() + (use_ptx ? ":ptx" : ":cubin");
  std::lock_guard lock(m_state->mutex);
  if (const auto it = m_state->modules.find(key); it != m_state->modules.end()) {
    return Module(m_state, it->second);
  }
  const driver::DriverApi& api = driver::require_driver();
  auto state = std::make_shared<Module::State>();
  state->context = m_state->context;
  state->program = prepared.program().name;
  state->device = device_text(m_state->device);
  state->lowered_names = binary.lowered_names;
  state->from_ptx = use_ptx;
  const driver::ScopedContext scope(m_state->context);
  // The image is read during the call only; the driver keeps its own copy.
  const void* image = use_ptx ? static_cast<const void*>(binary.ptx.c_str()) : binary.cubin.data();
  driver::check(api.module_load_data(&state->module, image), [&] {
    return "cuModuleLoadData of " + state->program + " (" + binary.arch + (use_ptx ? ", PTX" : ", cubin") + ") on " +
           state->device;
  });
  m_state->modules.emplace(key, state);
  return Module(m_state, state);
}

} // namespace kjit
