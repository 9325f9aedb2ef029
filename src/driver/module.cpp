// Modules and kernels: lookup by name or name expression, attributes (get and set).
#include "driver/module_state.hpp"

#include <kjit/error.hpp>

#include <tuple>

namespace kjit {

namespace {

int function_attribute(const driver::DriverApi& api, CUfunction function, CUfunction_attribute attribute,
                       const std::string& what)
{
  int value = 0;
  driver::check(api.func_get_attribute(&value, attribute, function),
                [&] { return "cuFuncGetAttribute(" + std::to_string(attribute) + ") of " + what; });
  return value;
}

} // namespace

Module::State::~State()
{
  const driver::DriverApi* api = driver::cleanup_api();
  if (api == nullptr || module == nullptr) {
    return;
  }
  const driver::ScopedContext scope(context, driver::ScopedContext::OnFailure::ignore);
  if (scope.active()) {  // else the context is gone, and its modules with it
    std::ignore = driver::note_cleanup(api->module_unload(module));
  }
}

std::string Module::symbol_of(const std::string& name) const
{
  for (const auto& [expression, lowered] : m_state->lowered_names) {
    if (expression == name || (expression.size() == name.size() + 1 && expression[0] == '&' &&
                               expression.compare(1, std::string::npos, name) == 0)) {
      return lowered;
    }
  }
  return name;
}

Kernel Module::kernel(const std::string& name_or_expression) const
{
  const std::string name = symbol_of(name_or_expression);
  const driver::DriverApi& api = driver::require_driver();  // before the lock, as in Context::load
  std::lock_guard lock(m_state->mutex);
  std::shared_ptr<Kernel::Function>& function = m_state->functions[name];
  if (!function) {
    auto fresh = std::make_shared<Kernel::Function>();
    const driver::ScopedContext scope(m_state->context);
    const CUresult result = api.module_get_function(&fresh->function, m_state->module, name.c_str());
    if (result != CUDA_SUCCESS) {
      m_state->functions.erase(name);
      driver::throw_cuda_error(result, "kernel '" + name_or_expression + "'" +
                                         (name != name_or_expression ? " (" + name + ")" : "") + " of " +
                                         m_state->program + " on " + m_state->device);
    }
    if (const auto it = m_state->layouts.find(name); it != m_state->layouts.end()) {
      fresh->layout = &it->second;
    }
    function = std::move(fresh);
  }
  return Kernel(m_context, m_state, function, name_or_expression);
}

void* Module::handle() const noexcept
{
  return m_state->module;
}

bool Module::loaded_from_ptx() const noexcept
{
  return m_state->from_ptx;
}

const std::string& Module::image_kind() const noexcept
{
  return m_state->kind;
}

void* Kernel::handle() const noexcept
{
  return m_function->function;
}

KernelAttributes Kernel::attributes() const
{
  const driver::DriverApi& api = driver::require_driver();
  const driver::ScopedContext scope(m_module->context);
  const auto function = m_function->function;
  const std::string what = m_name + " of " + m_module->program;
  KernelAttributes a;
  a.registers = function_attribute(api, function, CU_FUNC_ATTRIBUTE_NUM_REGS, what);
  a.max_threads = function_attribute(api, function, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, what);
  a.static_shared_bytes = function_attribute(api, function, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, what);
  a.max_dynamic_shared_bytes = function_attribute(api, function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, what);
  a.local_bytes = function_attribute(api, function, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, what);
  a.const_bytes = function_attribute(api, function, CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES, what);
  a.ptx_version = function_attribute(api, function, CU_FUNC_ATTRIBUTE_PTX_VERSION, what);
  a.binary_version = function_attribute(api, function, CU_FUNC_ATTRIBUTE_BINARY_VERSION, what);
  int optin = 0;
  driver::check(api.device_get_attribute(&optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                                         m_context->device_handle),
                [&] { return "cuDeviceGetAttribute(MAX_SHARED_MEMORY_PER_BLOCK_OPTIN) on " + m_module->device; });
  a.max_dynamic_shared_optin_bytes = optin - a.static_shared_bytes;
  return a;
}

void Kernel::set_attribute(int attribute, int value, const char* name) const
{
  const driver::DriverApi& api = driver::require_driver();
  const driver::ScopedContext scope(m_module->context);
  driver::check(api.func_set_attribute(m_function->function, static_cast<CUfunction_attribute>(attribute), value), [&] {
    return std::string("cuFuncSetAttribute(") + name + ", " + std::to_string(value) + ") for " + m_name + " of " +
           m_module->program + " on " + m_module->device;
  });
}

void Kernel::set_max_dynamic_shared_bytes(int bytes) const
{
  driver::require_driver();  // before the lock, as in Context::load
  std::lock_guard lock(m_function->mutex);
  set_attribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes, "MAX_DYNAMIC_SHARED_SIZE_BYTES");
  m_function->shared_raised = true;  // the application's choice: launches leave it as it is
  m_function->dynamic_shared_limit.store(bytes, std::memory_order_release);
}

void Kernel::set_preferred_shared_carveout(int percent) const
{
  set_attribute(CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, percent, "PREFERRED_SHARED_MEMORY_CARVEOUT");
}

void Kernel::set_non_portable_cluster_size_allowed(bool allowed) const
{
  set_attribute(CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, allowed ? 1 : 0,
                "NON_PORTABLE_CLUSTER_SIZE_ALLOWED");
}

} // namespace kjit
