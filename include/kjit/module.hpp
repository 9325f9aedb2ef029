// Loading cached binaries with the CUDA Driver API (cuModuleLoadData) and launching kernels.
#pragma once

#include <kjit/binary.hpp>
#include <kjit/cache.hpp>
#include <kjit/launch.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kjit {

class Module;

// A CUDA context: a device's primary context (retained while any copy lives) or one the
// application owns. Each context keeps the modules loaded in it, so one cached program is loaded
// once per context. Copies share state. Thread-safe.
class Context {
public:
  struct State;

  // The primary context of `device` (retained; released when the last copy goes).
  static Context primary(int device = 0);
  // The calling thread's current context if it has one, else device 0's primary context.
  static Context current();
  // An application-owned CUcontext (passed as void*); kjit neither retains nor destroys it.
  static Context wrap(void* cu_context, int device);

  void* handle() const noexcept;
  int device() const noexcept;
  // Compute capability as major*10+minor.
  int compute_capability() const;
  std::string device_name() const;

  // The module of `prepared` in this context, loading `binary` on first use (the cubin, or the
  // PTX when the binary has no cubin or KJIT_FORCE_PTX is set). Throws CudaError.
  Module load(const PreparedProgram& prepared, const Binary& binary) const;
  // Modules loaded in this context so far.
  std::size_t loaded_modules() const;

private:
  friend class DeviceBuffer;
  explicit Context(std::shared_ptr<State> state) : m_state(std::move(state)) {}
  std::shared_ptr<State> m_state;
};

class Kernel;

// A loaded module. It stays loaded while its context lives (the context's module cache holds
// it); copies share the one CUmodule.
class Module {
public:
  struct State;

  // The kernel named `name` (an extern "C" name or a lowered name), or the kernel of a name
  // expression of the program ("scale<float>"). Throws CudaError naming program, kernel, device.
  Kernel kernel(const std::string& name_or_expression) const;
  void* handle() const noexcept;
  bool loaded_from_ptx() const noexcept;

private:
  friend class Context;
  Module(std::shared_ptr<Context::State> context, std::shared_ptr<State> state)
    : m_context(std::move(context)), m_state(std::move(state))
  {
  }
  std::shared_ptr<Context::State> m_context;  // keeps the context (and so the module) alive
  std::shared_ptr<State> m_state;
};

// What the driver reports for a kernel (cuFuncGetAttribute), in bytes where not said otherwise.
struct KernelAttributes {
  int registers = 0;                 // per thread
  int max_threads = 0;               // per block, given its registers and shared memory
  int static_shared_bytes = 0;       // __shared__ variables
  int max_dynamic_shared_bytes = 0;  // dynamic shared memory a launch may use now (48 KiB minus the
                                     // static part until a launch asked for more)
  int max_dynamic_shared_optin_bytes = 0;  // the most it can be raised to on this device
  int local_bytes = 0;               // per thread
  int const_bytes = 0;               // user __constant__ data
};

// A kernel of a loaded module. Copies share one state per CUfunction; keeps its module and
// context alive. Thread-safe.
class Kernel {
public:
  struct Function;

  // Launches with typed arguments, checked against the kernel's parameters when the module was
  // loaded from a cubin: a wrong count or size throws LaunchError before the driver is called.
  // A launch that asks for more than 48 KiB of dynamic shared memory raises the kernel's limit to
  // the device's maximum first (once per kernel and context). Throws CudaError naming program,
  // kernel and device when the driver fails.
  template <typename... Args>
  void launch(const LaunchConfig& config, const Args&... args) const
  {
    ArgumentPack pack(args...);
    launch_packed(config, pack);
  }
  // launch() with arguments packed already: count and sizes checked as there.
  void launch_packed(const LaunchConfig& config, ArgumentPack& arguments) const;
  // The driver's own form: `count` pointers to the arguments. Only the count can be checked.
  void launch_raw(const LaunchConfig& config, void** arguments, std::size_t count) const;

  // cuOccupancyMaxPotentialBlockSize: the block size with the best occupancy, and the smallest
  // grid that reaches it. `shared_bytes` is the dynamic shared memory per block.
  struct BlockSize {
    int block = 0;
    int min_grid = 0;
  };
  BlockSize max_potential_block_size(unsigned shared_bytes = 0, int block_limit = 0) const;
  // Active blocks per multiprocessor for `block` threads.
  int active_blocks_per_multiprocessor(int block, unsigned shared_bytes = 0) const;
  // The driver's view of the kernel. Throws CudaError.
  KernelAttributes attributes() const;

  const std::string& name() const noexcept { return m_name; }
  // The CUfunction.
  void* handle() const noexcept;

private:
  friend class Module;
  Kernel(std::shared_ptr<Context::State> context, std::shared_ptr<Module::State> module,
         std::shared_ptr<Function> function, std::string name)
    : m_context(std::move(context)), m_module(std::move(module)), m_function(std::move(function)),
      m_name(std::move(name))
  {
  }
  void check_arguments(std::size_t count, const std::size_t* sizes) const;
  void launch_checked(const LaunchConfig& config, void** arguments) const;

  std::shared_ptr<Context::State> m_context;
  std::shared_ptr<Module::State> m_module;
  std::shared_ptr<Function> m_function;
  std::string m_name;
};

// Device memory in a context, for tests, examples and simple applications. Move-only.
class DeviceBuffer {
public:
  DeviceBuffer(const Context& context, std::size_t bytes);
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer();

  void upload(const void* data, std::size_t bytes);
  void download(void* data, std::size_t bytes) const;
  // The CUdeviceptr, to pass as a kernel's pointer argument.
  std::uint64_t pointer() const noexcept { return m_pointer; }
  std::size_t size() const noexcept { return m_size; }

private:
  Context m_context;
  std::uint64_t m_pointer = 0;
  std::size_t m_size = 0;
};

// Waits for all work in `context`. Throws CudaError.
void synchronize(const Context& context);

// The arch to build for a device of compute capability `cc` (major*10+minor), given what NVRTC
// supports: `requested` unless it is auto; else sm_<cc>; for a device newer than every supported
// arch, compute_<newest> (PTX, JIT-compiled by the driver) with `ptx_fallback` set.
// Throws ArchError for a device older than every supported arch.
Arch arch_for_device(const Arch& requested, int cc, const std::vector<int>& supported, bool& ptx_fallback);

// The one-call path: a launchable kernel of `program` for the current context (else device 0's
// primary context): compiled for its device (or KJIT_ARCH), cached, and loaded once per context.
Kernel get_kernel(const Program& program, const std::string& name_or_expression);

} // namespace kjit
