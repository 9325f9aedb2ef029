// Which arch to build for a device: the current device, NVRTC's supported list, the PTX fallback.
#include "driver/device_arch.hpp"
#include "driver/driver_api.hpp"

#include "config/log.hpp"

#include <kjit/driver.hpp>
#include <kjit/error.hpp>
#include <kjit/module.hpp>

#include <algorithm>
#include <atomic>

namespace kjit {

namespace {

// The SM numbers NVRTC 13.0 builds for. A device in this list resolves to sm_<cc> without loading
// NVRTC (warm starts stay pure cache reads); any other device asks NVRTC for its list. NVRTC
// keeps every arch within a major release, so a newer 13.x only adds to this list.
constexpr int k_known_archs[] = {75, 80, 86, 87, 88, 89, 90, 100, 103, 110, 120, 121};

} // namespace

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

int current_device()
{
  const driver::DriverApi& api = driver::require_driver();
  CUcontext context = nullptr;
  driver::check(api.ctx_get_current(&context), [] { return std::string("cuCtxGetCurrent"); });
  if (context == nullptr) {
    return 0;
  }
  CUdevice handle{};
  driver::check(api.ctx_get_device(&handle, context), [] { return std::string("cuCtxGetDevice"); });
  return driver::ordinal_of(api, handle);
}

Arch current_device_arch(const std::function<std::vector<int>()>& supported)
{
  const int device = current_device();
  const int cc = device_compute_capability(device);
  if (std::find(std::begin(k_known_archs), std::end(k_known_archs), cc) != std::end(k_known_archs)) {
    return Arch::of_compute_capability(cc / 10, cc % 10);
  }
  bool ptx_fallback = false;
  const Arch arch = arch_for_device(Arch{}, cc, supported(), ptx_fallback);
  driver::warn_ptx_fallback(ptx_fallback, device, arch);
  return arch;
}

} // namespace kjit

namespace kjit::driver {

int ordinal_of(const DriverApi& api, CUdevice handle)
{
  int count = 0;
  check(api.device_get_count(&count), [] { return std::string("cuDeviceGetCount"); });
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    CUdevice candidate{};
    if (api.device_get(&candidate, ordinal) == CUDA_SUCCESS && candidate == handle) {
      return ordinal;
    }
  }
  throw CudaError("the current context's device (CUdevice " + std::to_string(handle) + ") has no ordinal",
                  CUDA_ERROR_INVALID_DEVICE);
}

void warn_ptx_fallback(bool ptx_fallback, int device, const Arch& arch)
{
  static std::atomic<bool> warned{false};
  if (ptx_fallback && !warned.exchange(true)) {
    log::line("warning: device " + std::to_string(device) + " is newer than every arch NVRTC can build a cubin "
              "for; loading " + arch.str() + " PTX for the driver to JIT-compile");
  }
}

} // namespace kjit::driver
