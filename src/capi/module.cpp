// kjit_module_* and kjit_kernel_*: loading a binary with the driver and launching its kernels, for C.
#include "capi/handles.hpp"
#include "capi/status.hpp"

#include <kjit/launch.hpp>

extern "C" {

kjit_status kjit_module_load(const kjit_binary* binary, int device, kjit_module** out)
{
  KJIT_CAPI_REQUIRE(out);
  *out = nullptr;
  KJIT_CAPI_REQUIRE(binary);
  return kjit::capi::guarded([&] {
    const kjit::Context context = device < 0 ? kjit::Context::current() : kjit::Context::primary(device);
    kjit::Module module = context.load(*binary->binary);
    *out = new kjit_module{context, std::move(module)};
  });
}

void kjit_module_destroy(kjit_module* module)
{
  delete module;
}

kjit_status kjit_module_synchronize(const kjit_module* module)
{
  KJIT_CAPI_REQUIRE(module);
  return kjit::capi::guarded([&] { kjit::synchronize(module->context); });
}

kjit_status kjit_module_kernel(const kjit_module* module, const char* name, kjit_kernel** out)
{
  KJIT_CAPI_REQUIRE(out);
  *out = nullptr;
  KJIT_CAPI_REQUIRE(module);
  KJIT_CAPI_REQUIRE(name);
  return kjit::capi::guarded([&] { *out = new kjit_kernel{module->module.kernel(name)}; });
}

void kjit_kernel_destroy(kjit_kernel* kernel)
{
  delete kernel;
}

kjit_status kjit_kernel_launch(const kjit_kernel* kernel, const kjit_launch_config* config, void** arguments,
                               size_t count)
{
  KJIT_CAPI_REQUIRE(kernel);
  KJIT_CAPI_REQUIRE(config);
  if (count > 0) {
    KJIT_CAPI_REQUIRE(arguments);
  }
  return kjit::capi::guarded([&] {
    kjit::LaunchConfig launch;
    launch.grid = kjit::Dim3(config->grid[0], config->grid[1], config->grid[2]);
    launch.block = kjit::Dim3(config->block[0], config->block[1], config->block[2]);
    launch.shared_bytes = config->shared_bytes;
    launch.stream = config->stream;
    kernel->kernel.launch_raw(launch, arguments, count);
  });
}

} // extern "C"
