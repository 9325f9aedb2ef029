// Finds the fake driver's test functions in the libcuda.so.1 that kjit loaded.
#include "fake_driver.hpp"

#include <kjit/driver.hpp>

#include <boost/test/unit_test.hpp>

#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>

#include <stdexcept>

namespace kjit::test {

namespace {

template <typename Fn>
void bind(void* library, Fn*& out, const char* name)
{
  out = reinterpret_cast<Fn*>(::dlsym(library, name));
  if (out == nullptr) {
    throw std::runtime_error(std::string("the loaded libcuda.so.1 is not the fake: no ") + name);
  }
}

FakeDriver load()
{
  static_cast<void>(kjit::driver_status());
  void* library = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (library == nullptr) {
    throw std::runtime_error("libcuda.so.1 is not loaded");
  }
  FakeDriver f;
  bind(library, f.log, "fake_cuda_log");
  bind(library, f.clear_log, "fake_cuda_clear_log");
  bind(library, f.violations, "fake_cuda_violations");
  bind(library, f.last_params, "fake_cuda_last_params");
  bind(library, f.primary_retains, "fake_cuda_primary_retains");
  bind(library, f.loaded_modules, "fake_cuda_loaded_modules");
  bind(library, f.pushes, "fake_cuda_pushes");
  bind(library, f.pops, "fake_cuda_pops");
  bind(library, f.stack_depth, "fake_cuda_stack_depth");
  bind(library, f.create_context, "fake_cuda_create_context");
  bind(library, f.destroy_context, "fake_cuda_destroy_context");
  bind(library, f.set_current, "fake_cuda_set_current");
  bind(library, f.create_stream, "fake_cuda_create_stream");
  bind(library, f.hold_loads, "fake_cuda_hold_loads");
  bind(library, f.wait_load_held, "fake_cuda_wait_load_held");
  bind(library, f.release_loads, "fake_cuda_release_loads");
  PFN_cuGetProcAddress_v12000 get = nullptr;
  bind(library, get, "cuGetProcAddress_v2");
  void* address = nullptr;
  get("cuDevicePrimaryCtxRetain", &address, 7000, 0, nullptr);
  f.retain_primary = reinterpret_cast<int (*)(void**, int)>(address);
  get("cuDevicePrimaryCtxRelease", &address, 11000, 0, nullptr);
  f.release_primary = reinterpret_cast<int (*)(int)>(address);
  return f;
}

} // namespace

int FakeDriver::count(const std::string& text) const
{
  const std::string all = log();
  int n = 0;
  for (std::size_t at = all.find(text); at != std::string::npos; at = all.find(text, at + 1)) {
    ++n;
  }
  return n;
}

const FakeDriver& fake()
{
  static const FakeDriver instance = load();
  return instance;
}

DriverFixture::DriverFixture()
{
  BOOST_TEST_REQUIRE(kjit::driver_status().available, kjit::driver_status().reason);
  kjit::option::cache_dir(config.cache_dir);
  fake().clear_log();
}

DriverFixture::~DriverFixture()
{
  kjit::option::reset();
}

void DriverFixture::check_clean() const
{
  BOOST_TEST(fake().pushes() == fake().pops());
  BOOST_TEST(std::string(fake().violations()).empty(), fake().violations());
}

} // namespace kjit::test
