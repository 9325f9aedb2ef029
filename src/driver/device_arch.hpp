// Helpers shared by the arch choice, Context and get_kernel.
#pragma once

#include "driver/driver_api.hpp"

#include <kjit/arch.hpp>

namespace kjit::driver {

// The ordinal of a CUdevice handle (the two need not be equal). Throws CudaError.
int ordinal_of(const DriverApi& api, CUdevice handle);

// Logs once per process that `device` gets PTX for the driver to JIT-compile.
void warn_ptx_fallback(bool ptx_fallback, int device, const Arch& arch);

} // namespace kjit::driver
