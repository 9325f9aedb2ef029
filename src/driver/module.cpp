// Modules and kernels: lookup by name or name expression, launch, occupancy.
#include "driver/module_state.hpp"

#include <kjit/error.hpp>

#include <tuple>

namespace kjit {

Module::State::~State()
{
  const driver::DriverApi* api = driver::driver_api();
  if (api == nullptr || module == nullptr) {
    return;
  }
  const driver::ScopedContext scope(context, driver::ScopedContext::OnFailure::ignore);
  std::ignore = api->module_unload(module);
}

Kernel Module::kernel(const std::string& name_or_expression) const
{
  std::string name = name_or_expression;
  for (const auto& [expression, lowered] : m_state->lowered_names) {
    if (expression == name_or_expression) {
      name = lowered;
    }
  }
  const driver::DriverApi& api = driver::require_driver();
  CUfunction function = nullptr;
  const driver::ScopedContext scope(m_state->context);
  driver::check(api.module_get_function(&function, m_state->module, name.c_str()), [&] {
    return "kernel '" + name_or_expression + "'" + (name != name_or_expression ? " (" + name + ")" : "") + " of " +
           m_state->program + " on " + m_state->device;
  });
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

void Kernel::launch_packed(const LaunchConfig& config, void** arguments) const
{
  const driver::DriverApi& api = driver::require_driver();
  const driver::ScopedContext scope(m_module->context);
  driver::check(api.launch_kernel(static_cast<CUfunction>(m_function), config.grid.x, config.grid.y, config.grid.z,
                                  config.block.x, config.block.y, config.block.z, config.shared_bytes,
                                  static_cast<CUstream>(config.stream), arguments, nullptr),
                [&] {
                  return "launching " + m_name + " of " + m_module->program + " on " + m_module->device + " (grid " +
                         std::to_string(config.grid.x) + "x" + std::to_string(config.grid.y) + "x" +
                         std::to_string(config.grid.z) + ", block " + std::to_string(config.block.x) + "x" +
                         std::to_string(config.block.y) + "x" + std::to_string(config.block.z) + ")";
                });
}

Kernel::BlockSize Kernel::max_potential_block_size(unsigned shared_bytes, int block_limit) const
{
  const driver::DriverApi& api = driver::require_driver();
  const driver::ScopedContext scope(m_module->context);
  BlockSize size;
  driver::check(api.occupancy_max_potential_block_size(&size.min_grid, &size.block, static_cast<CUfunction>(m_function),
                                                       nullptr, shared_bytes, block_limit),
                [&] { return "cuOccupancyMaxPotentialBlockSize for " + m_name + " of " + m_module->program; });
  return size;
}

int Kernel::active_blocks_per_multiprocessor(int block, unsigned shared_bytes) const
{
  const driver::DriverApi& api = driver::require_driver();
  const driver::ScopedContext scope(m_module->context);
  int blocks = 0;
  driver::check(api.occupancy_max_active_blocks(&blocks, static_cast<CUfunction>(m_function), block, shared_bytes),
                [&] { return "cuOccupancyMaxActiveBlocksPerMultiprocessor for " + m_name + " of " + m_module->program; });
  return blocks;
}

} // namespace kjit
