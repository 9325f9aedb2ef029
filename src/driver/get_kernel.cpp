// Arch selection for a device (with the PTX fallback) and the one-call get_kernel().
#include "driver/module_state.hpp"

#include "config/log.hpp"

#include <kjit/error.hpp>

#include <algorithm>
#include <atomic>

namespace kjit {

Arch arch_for_device(const Arch& requested, int cc, const std::vector<int>& supported, bool& ptx_fallback)
{
  ptx_fallback = false;
  if (!requested.is_auto()) {
    return requested;
  }
  if (std::find(supported.begin(), supported.end(), cc) != supported.end()) {
    return Arch::of_compute_capability(cc / 10, cc % 10);
  }
  if (supported.empty()) {
    throw ArchError("NVRTC reports no supported arch");
  }
  const int newest = *std::max_element(supported.begin(), supported.end());
  if (cc > newest) {
    ptx_fallback = true;
    return Arch::parse("compute_" + std::to_string(newest));
  }
  // Between supported numbers (a minor revision NVRTC does not list): the nearest older one runs.
  int best = 0;
  for (int arch : supported) {
    if (arch <= cc && arch / 10 == cc / 10) {
      best = std::max(best, arch);
    }
  }
  if (best == 0) {
    throw ArchError("the device's compute capability " + std::to_string(cc / 10) + "." + std::to_string(cc % 10) +
                    " is older than every arch NVRTC supports");
  }
  return Arch::of_compute_capability(best / 10, best % 10);
}

Kernel get_kernel(const Program& program, const std::string& name_or_expression)
{
  const Context context = Context::current();
  Cache& cache = default_cache();
  bool ptx_fallback = false;
  const Arch arch =
    arch_for_device(Arch::parse(cache.config().arch), context.compute_capability(), cache.supported_archs(), ptx_fallback);
  static std::atomic<bool> warned{false};
  if (ptx_fallback && !warned.exchange(true)) {
    log::line("warning: device " + std::to_string(context.device()) + " is newer than every arch NVRTC can build a cubin "
              "for; loading " + arch.str() + " PTX for the driver to JIT-compile");
  }
  const PreparedProgram prepared = cache.prepare(program, arch);
  const auto binary = cache.get(prepared);
  return context.load(prepared, *binary).kernel(name_or_expression);
}

} // namespace kjit
