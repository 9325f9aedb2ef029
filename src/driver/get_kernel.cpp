// The one-call get_kernel(): the current context, its device's arch, the default cache, the module.
#include "driver/module_state.hpp"

#include "driver/device_arch.hpp"

#include <kjit/error.hpp>

namespace kjit {

Kernel get_kernel(const Program& program, const std::string& name_or_expression)
{
  const Context context = Context::current();
  const std::shared_ptr<Cache> held = shared_default_cache();  // lives through this call
  Cache& cache = *held;
  bool ptx_fallback = false;
  const Arch arch =
    arch_for_device(Arch::parse(cache.config().arch), context.compute_capability(), cache.supported_archs(), ptx_fallback);
  driver::warn_ptx_fallback(ptx_fallback, context.device(), arch);
  const PreparedProgram prepared = cache.prepare(program, arch);
  const auto binary = cache.get(prepared);
  return context.load(prepared, *binary).kernel(name_or_expression);
}

} // namespace kjit
