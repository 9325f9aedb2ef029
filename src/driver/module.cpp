// Modules and kernels: lookup by name or name expression, checked launch, attributes, occupancy.
#include "driver/module_state.hpp"

#include <kjit/error.hpp>

#include <tuple>

namespace kjit {

namespace {

// Dynamic shared memory a launch gets without raising CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES.
constexpr unsigned k_default_dynamic_shared = 48 * 1024;

std::string geometry_text(const LaunchConfig& config)
{
  return "grid " + std::to_string(config.grid.x) + "x" + std::to_string(config.grid.y) + "x" +
         std::to_string(config.grid.z) + ", block " + std::to_string(config.block.x) + "x" +
         std::to_string(config.block.y) + "x" + std::to_string(config.block.z) + ", " +
         std::to_string(config.shared_bytes) + " bytes of dynamic shared memory";
}

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
  const driver::DriverApi* api = driver::driver_api();
  if (api == nullptr || module == nullptr) {
    return;
  }
  const driver::ScopedContext scope(context, driver::ScopedContext::OnFailure::ignore);
  if (scope.active()) {  // else the context is gone, and its modules with it
    std::ignore = api->module_unload(module);
  }
}

Kernel Module::kernel(const std::string& name_or_expression) const
{
  std::string name = name_or_expression;
  for (const auto& [expression, lowered] : m_state->lowered_names) {
    if (expression == name_or_expression) {
      name = lowered;
    }
  }
  std::lock_guard lock(m_state->mutex);
  std::shared_ptr<Kernel::Function>& function = m_state->functions[name];
  if (!function) {
    const driver::DriverApi& api = driver::require_driver();
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

void* Kernel::handle() const noexcept
{
  return m_function->function;
}

void Kernel::check_arguments(std::size_t count, const std::size_t* sizes) const
{
  const driver::KernelLayout* layout = m_function->layout;
  if (layout == nullptr) {
    return;  // loaded from PTX: no layout to check against
  }
  const std::string kernel = "kernel '" + m_name + "' of " + m_module->program;
  if (count != layout->sizes.size()) {
    throw LaunchError(kernel + " takes " + std::to_string(layout->sizes.size()) + " parameters; the launch passed " +
                        std::to_string(count) + " arguments",
                      m_name, std::min(count, layout->sizes.size()), layout->sizes.size(), count);
  }
  for (std::size_t i = 0; sizes != nullptr && i < count; ++i) {
    if (sizes[i] != layout->sizes[i]) {
      throw LaunchError(kernel + ": parameter " + std::to_string(i) + " is " + std::to_string(layout->sizes[i]) +
                          " bytes; the argument given is " + std::to_string(sizes[i]) + " bytes",
                        m_name, i, layout->sizes[i], sizes[i]);
    }
  }
}

void Kernel::launch_packed(const LaunchConfig& config, ArgumentPack& arguments) const
{
  check_arguments(arguments.size(), arguments.sizes());
  launch_checked(config, arguments.data());
}

void Kernel::launch_raw(const LaunchConfig& config, void** arguments, std::size_t count) const
{
  check_arguments(count, nullptr);
  launch_checked(config, arguments);
}

void Kernel::launch_checked(const LaunchConfig& config, void** arguments) const
{
  const driver::DriverApi& api = driver::require_driver();
  const driver::ScopedContext scope(m_module->context);
  const auto function = m_function->function;
  const auto where = [&] {
    return "launching " + m_name + " of " + m_module->program + " on " + m_module->device + " (" +
           geometry_text(config) + ")";
  };
  if (config.shared_bytes > k_default_dynamic_shared) {
    // Like Triton: raised once to the most the device allows, so later launches need no call.
    std::lock_guard lock(m_function->mutex);
    if (!m_function->shared_raised) {
      const KernelAttributes limits = attributes();
      driver::check(api.func_set_attribute(function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                           limits.max_dynamic_shared_optin_bytes),
                    [&] {
                      return "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES, " +
                             std::to_string(limits.max_dynamic_shared_optin_bytes) + ") for " + where();
                    });
      m_function->shared_raised = true;
    }
  }
  driver::check(api.launch_kernel(function, config.grid.x, config.grid.y, config.grid.z, config.block.x, config.block.y,
                                  config.block.z, config.shared_bytes, static_cast<CUstream>(config.stream), arguments,
                                  nullptr),
                where);
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
  int optin = 0;
  driver::check(api.device_get_attribute(&optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                                         m_context->device_handle),
                [&] { return "cuDeviceGetAttribute(MAX_SHARED_MEMORY_PER_BLOCK_OPTIN) on " + m_module->device; });
  a.max_dynamic_shared_optin_bytes = optin - a.static_shared_bytes;
  return a;
}

Kernel::BlockSize Kernel::max_potential_block_size(unsigned shared_bytes, int block_limit) const
{
  const driver::DriverApi& api = driver::require_driver();
  const driver::ScopedContext scope(m_module->context);
  BlockSize size;
  driver::check(api.occupancy_max_potential_block_size(&size.min_grid, &size.block, m_function->function, nullptr,
                                                       shared_bytes, block_limit),
                [&] { return "cuOccupancyMaxPotentialBlockSize for " + m_name + " of " + m_module->program; });
  return size;
}

int Kernel::active_blocks_per_multiprocessor(int block, unsigned shared_bytes) const
{
  const driver::DriverApi& api = driver::require_driver();
  const driver::ScopedContext scope(m_module->context);
  int blocks = 0;
  driver::check(api.occupancy_max_active_blocks(&blocks, m_function->function, block, shared_bytes),
                [&] { return "cuOccupancyMaxActiveBlocksPerMultiprocessor for " + m_name + " of " + m_module->program; });
  return blocks;
}

} // namespace kjit
