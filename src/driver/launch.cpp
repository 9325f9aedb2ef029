// Launching kernels: arguments checked against the cubin, plain, cluster and cooperative launches,
// the 48 KiB dynamic shared memory limit, occupancy.
#include "driver/module_state.hpp"

#include <kjit/error.hpp>

#include <algorithm>
#include <exception>
#include <utility>

namespace kjit {

namespace {

std::string dim_text(const Dim3& d)
{
  return std::to_string(d.x) + "x" + std::to_string(d.y) + "x" + std::to_string(d.z);
}

bool is_cluster(const Dim3& cluster)
{
  return cluster.x != 1 || cluster.y != 1 || cluster.z != 1;  // a product would wrap: 65536 * 65536 * 1 == 0
}

std::string geometry_text(const LaunchConfig& config)
{
  return "grid " + dim_text(config.grid) + ", block " + dim_text(config.block) + ", " +
         std::to_string(config.shared_bytes) + " bytes of dynamic shared memory" +
         (is_cluster(config.cluster) ? ", cluster " + dim_text(config.cluster) : "") +
         (config.cooperative ? ", cooperative" : "");
}

// The cuLaunchKernelEx form of `config`; `attributes` must outlive the result.
CUlaunchConfig ex_config(const LaunchConfig& config, CUlaunchAttribute (&attributes)[2])
{
  CUlaunchConfig ex{};
  ex.gridDimX = config.grid.x;
  ex.gridDimY = config.grid.y;
  ex.gridDimZ = config.grid.z;
  ex.blockDimX = config.block.x;
  ex.blockDimY = config.block.y;
  ex.blockDimZ = config.block.z;
  ex.sharedMemBytes = config.shared_bytes;
  ex.hStream = static_cast<CUstream>(config.stream);
  ex.attrs = attributes;
  ex.numAttrs = 0;
  if (is_cluster(config.cluster)) {
    CUlaunchAttribute& a = attributes[ex.numAttrs++];
    a = CUlaunchAttribute{};
    a.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    a.value.clusterDim.x = config.cluster.x;
    a.value.clusterDim.y = config.cluster.y;
    a.value.clusterDim.z = config.cluster.z;
  }
  if (config.cooperative) {
    CUlaunchAttribute& a = attributes[ex.numAttrs++];
    a = CUlaunchAttribute{};
    a.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    a.value.cooperative = 1;
  }
  return ex;
}

// The block-size → dynamic shared memory function of the occupancy call running on this thread:
// the driver's callback takes no user data, and calls it on the calling thread during the call.
// An exception from it must not cross the driver (a C library): it is kept and rethrown after.
thread_local const std::function<std::size_t(int)>* t_shared_bytes_for = nullptr;
thread_local std::exception_ptr t_shared_bytes_error;

std::size_t CUDA_CB shared_bytes_trampoline(int block)
{
  if (t_shared_bytes_error) {
    return ~std::size_t{0} >> 1;  // fits no block: the driver finishes quickly
  }
  try {
    return (*t_shared_bytes_for)(block);
  } catch (...) {
    t_shared_bytes_error = std::current_exception();
    return ~std::size_t{0} >> 1;
  }
}

} // namespace

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
  // Without opting in a launch gets 48 KiB of shared memory, static and dynamic together: the
  // kernel's limit (read once) is 48 KiB less its static part. Like Triton, a launch over it raises
  // it once to the most the device allows, so later launches need no call.
  const int known_limit = m_function->dynamic_shared_limit.load(std::memory_order_acquire);
  if (config.shared_bytes > 0 && (known_limit < 0 || config.shared_bytes > static_cast<unsigned>(known_limit))) {
    std::lock_guard lock(m_function->mutex);
    int limit = m_function->dynamic_shared_limit.load(std::memory_order_relaxed);
    if (limit < 0) {
      driver::check(api.func_get_attribute(&limit, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, function),
                    [&] { return "cuFuncGetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES) for " + where(); });
      m_function->dynamic_shared_limit.store(limit, std::memory_order_release);
    }
    if (config.shared_bytes > static_cast<unsigned>(limit) && !m_function->shared_raised) {
      const KernelAttributes limits = attributes();
      driver::check(api.func_set_attribute(function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                           limits.max_dynamic_shared_optin_bytes),
                    [&] {
                      return "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES, " +
                             std::to_string(limits.max_dynamic_shared_optin_bytes) + ") for " + where();
                    });
      m_function->shared_raised = true;
      m_function->dynamic_shared_limit.store(limits.max_dynamic_shared_optin_bytes, std::memory_order_release);
    }
  }
  if (is_cluster(config.cluster) || config.cooperative) {
    CUlaunchAttribute attributes[2];
    const CUlaunchConfig ex = ex_config(config, attributes);
    driver::check(api.launch_kernel_ex(&ex, function, arguments, nullptr), where);
    return;
  }
  driver::check(api.launch_kernel(function, config.grid.x, config.grid.y, config.grid.z, config.block.x, config.block.y,
                                  config.block.z, config.shared_bytes, static_cast<CUstream>(config.stream), arguments,
                                  nullptr),
                where);
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

Kernel::BlockSize Kernel::max_potential_block_size(const std::function<std::size_t(int)>& shared_bytes_for,
                                                   int block_limit) const
{
  const driver::DriverApi& api = driver::require_driver();
  const driver::ScopedContext scope(m_module->context);
  BlockSize size;
  const auto* outer = std::exchange(t_shared_bytes_for, &shared_bytes_for);
  const CUresult result = api.occupancy_max_potential_block_size(&size.min_grid, &size.block, m_function->function,
                                                                 shared_bytes_trampoline, 0, block_limit);
  t_shared_bytes_for = outer;
  if (const std::exception_ptr error = std::exchange(t_shared_bytes_error, nullptr)) {
    std::rethrow_exception(error);
  }
  driver::check(result, [&] { return "cuOccupancyMaxPotentialBlockSize for " + m_name + " of " + m_module->program; });
  return size;
}

std::size_t Kernel::available_dynamic_shared_bytes(int blocks, int block) const
{
  const driver::DriverApi& api = driver::require_driver();
  const driver::ScopedContext scope(m_module->context);
  std::size_t bytes = 0;
  driver::check(api.occupancy_available_dynamic_smem(&bytes, m_function->function, blocks, block), [&] {
    return "cuOccupancyAvailableDynamicSMemPerBlock for " + m_name + " of " + m_module->program;
  });
  return bytes;
}

int Kernel::max_cooperative_grid(int block, unsigned shared_bytes) const
{
  const driver::DriverApi& api = driver::require_driver();
  int multiprocessors = 0;
  driver::check(api.device_get_attribute(&multiprocessors, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                                         m_context->device_handle),
                [&] { return "cuDeviceGetAttribute(MULTIPROCESSOR_COUNT) on " + m_module->device; });
  return active_blocks_per_multiprocessor(block, shared_bytes) * multiprocessors;
}

int Kernel::max_active_clusters(const LaunchConfig& config) const
{
  const driver::DriverApi& api = driver::require_driver();
  const driver::ScopedContext scope(m_module->context);
  CUlaunchAttribute attributes[2];
  const CUlaunchConfig ex = ex_config(config, attributes);
  int clusters = 0;
  driver::check(api.occupancy_max_active_clusters(&clusters, m_function->function, &ex), [&] {
    return "cuOccupancyMaxActiveClusters for " + m_name + " of " + m_module->program + " (" + geometry_text(config) + ")";
  });
  return clusters;
}

} // namespace kjit
