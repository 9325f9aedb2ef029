// Loading cached binaries with the CUDA Driver API (cuModuleLoadData) and launching kernels.
#pragma once

#include <kjit/binary.hpp>
#include <kjit/cache.hpp>
#include <kjit/launch.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace kjit {

class Module;

// How a module image is loaded (cuModuleLoadDataEx). The JIT settings apply when the driver compiles
// PTX (a PTX image, a Binary without a cubin, KJIT_FORCE_PTX, or a fatbin holding only PTX); a cubin
// is loaded as it is. Loading a Program's binary takes them from its NVRTC options
// (-maxrregcount, -lineinfo, -G), so the driver's JIT makes the code NVRTC would have made.
struct LoadOptions {
  std::string name;          // names the module in errors ("kernel 'f' of <name> on device 0")
  int max_registers = 0;     // CU_JIT_MAX_REGISTERS per thread; 0: the driver's choice
  bool line_info = false;    // CU_JIT_GENERATE_LINE_INFO
  bool debug = false;        // CU_JIT_GENERATE_DEBUG_INFO (and no optimisation, as -G)
};

// The JIT settings the NVRTC options `options` ask for (-maxrregcount=N, -lineinfo, -G and their
// long forms). Throws OptionError for a malformed -maxrregcount.
LoadOptions load_options_of(const std::vector<std::string>& options);

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
  // An application-owned CUcontext (passed as void*) on `device`; kjit neither retains nor
  // destroys it. Throws CudaError for a null context or one on another device.
  static Context wrap(void* cu_context, int device);

  void* handle() const noexcept;
  int device() const noexcept;
  // Compute capability as major*10+minor.
  int compute_capability() const;
  std::string device_name() const;

  // The module of `binary` (get(prepared)'s) for `prepared` in this context, loading it on first
  // use (the cubin, or the PTX when the binary has no cubin or KJIT_FORCE_PTX is set): once per
  // context and prepared key, or, for a program whose key holds disk headers or the working
  // directory, once per image content (and settings), so the binary get(prepared) returns after
  // a header edit is loaded, not the module of the one before. Throws CudaError.
  // JIT settings come from the program's options (see LoadOptions).
  Module load(const PreparedProgram& prepared, const Binary& binary) const;
  // Any Binary (kjit::compile()'s, a lookup's, one built by hand): its cubin, or its PTX when it
  // has no cubin or KJIT_FORCE_PTX is set; its lowered names make name expressions work. Loaded
  // once per context and image content (and settings). Throws ImageError for a binary with
  // neither, CudaError when the driver refuses it (the JIT's log in the message).
  Module load(const Binary& binary, const LoadOptions& options = {}) const;
  // A module image as an application ships it: a cubin (ELF), a fatbin, or PTX text (with or
  // without a terminating NUL), told apart by content and checked before the driver sees it
  // (a truncated or malformed cubin or fatbin is an ImageError). Loaded once per context and
  // content. Launches of a cubin's kernels are checked as for a Program; a fatbin's and PTX
  // kernels are not (the driver picks the code). Throws ImageError, CudaError.
  Module load_image(std::string_view image, const LoadOptions& options = {}) const;
  // load_image() of the file `path` (a regular file); the module is named by the path unless
  // options.name says otherwise. Throws ImageError if it can't be read.
  Module load_file(const std::string& path, const LoadOptions& options = {}) const;
  // Modules loaded in this context so far. Throws CudaError (CUDA_ERROR_NOT_INITIALIZED) in a
  // fork()ed child, as every call on a parent's kjit objects there does.
  std::size_t loaded_modules() const;

  struct LoadRequest;

private:
  friend class DeviceBuffer;
  explicit Context(std::shared_ptr<State> state) : m_state(std::move(state)) {}
  Module load_request(const LoadRequest& request) const;
  std::shared_ptr<State> m_state;
};

class Kernel;

// A __device__ or __constant__ variable of a loaded module (cuModuleGetGlobal).
struct Global {
  std::uint64_t pointer = 0;  // the CUdeviceptr, e.g. to pass to a kernel
  std::size_t size = 0;       // bytes
};

// A loaded module. It stays loaded while its context lives (the context's module cache holds
// it); copies share the one CUmodule.
class Module {
public:
  struct State;

  // The kernel named `name` (an extern "C" name or a lowered name), or the kernel of a name
  // expression of the program ("scale<float>"). Throws CudaError naming program, kernel, device.
  Kernel kernel(const std::string& name_or_expression) const;

  // The module variable named `name_or_expression`: its name as in the symbol table (extern "C"
  // or a lowered name), or a name expression of the program, with or without its '&'
  // ("&table<int>" or "table<int>": add "&table<int>" to Program::name_expressions). Throws
  // CudaError naming variable, program and device when there is none.
  Global global(const std::string& name_or_expression) const;
  // Copies the variable to / from host memory, synchronously. `bytes` must be its size: another
  // size throws GlobalError before the driver is called. Throws CudaError.
  void read_global(const std::string& name_or_expression, void* data, std::size_t bytes) const;
  void write_global(const std::string& name_or_expression, const void* data, std::size_t bytes) const;
  // Typed forms: T must be trivially copyable and of the variable's size (GlobalError otherwise).
  template <typename T>
  T get_global(const std::string& name_or_expression) const
  {
    static_assert(std::is_trivially_copyable<T>::value, "module variables are copied as bytes");
    T value;
    read_global(name_or_expression, &value, sizeof value);
    return value;
  }
  template <typename T>
  void set_global(const std::string& name_or_expression, const T& value) const
  {
    static_assert(std::is_trivially_copyable<T>::value, "module variables are copied as bytes");
    write_global(name_or_expression, &value, sizeof value);
  }

  void* handle() const noexcept;
  // True when the driver JIT-compiled PTX (a PTX image, or a Binary loaded from its PTX).
  bool loaded_from_ptx() const noexcept;
  // What was loaded: "cubin", "ptx" or "fatbin".
  const std::string& image_kind() const noexcept;

private:
  friend class Context;
  // The lowered name of a kernel or variable named by a name expression, else `name` itself.
  std::string symbol_of(const std::string& name) const;
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
  int ptx_version = 0;               // PTX ISA the code came from, major*10+minor
  int binary_version = 0;            // SM of the loaded code, major*10+minor
};

// A kernel of a loaded module. Copies share one state per CUfunction; keeps its module and
// context alive. Thread-safe.
class Kernel {
public:
  struct Function;

  // Launches with typed arguments, checked against the kernel's parameters when the module was
  // loaded from a cubin: a wrong count or size throws LaunchError before the driver is called.
  // A launch that asks for more dynamic shared memory than the kernel's limit (48 KiB less its
  // static shared memory, until raised) raises the limit to the device's maximum first (once per
  // kernel and context; not after set_max_dynamic_shared_bytes). Throws CudaError naming program,
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
  // The same for dynamic shared memory that depends on the block size: `shared_bytes_for(block)`
  // is called (on this thread, during the call) for each block size the driver considers; an
  // exception it throws is rethrown once the driver returns.
  BlockSize max_potential_block_size(const std::function<std::size_t(int block)>& shared_bytes_for,
                                     int block_limit = 0) const;
  // Active blocks per multiprocessor for `block` threads.
  int active_blocks_per_multiprocessor(int block, unsigned shared_bytes = 0) const;
  // Dynamic shared memory each block may use when `blocks` blocks of `block` threads share a
  // multiprocessor (cuOccupancyAvailableDynamicSMemPerBlock).
  std::size_t available_dynamic_shared_bytes(int blocks, int block) const;
  // The most blocks a cooperative launch of `block` threads may have: active blocks per
  // multiprocessor times the device's multiprocessors.
  int max_cooperative_grid(int block, unsigned shared_bytes = 0) const;
  // Clusters of config.cluster that can be resident at once for `config` (cuOccupancyMaxActiveClusters).
  int max_active_clusters(const LaunchConfig& config) const;

  // The driver's view of the kernel. Throws CudaError.
  KernelAttributes attributes() const;
  // Sets the most dynamic shared memory launches of this kernel may ask for in this context
  // (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES); launches then leave the limit as set.
  // Throws CudaError when the device allows less.
  void set_max_dynamic_shared_bytes(int bytes) const;
  // The share of the L1/shared memory to use as shared memory, in percent (-1: the driver's
  // default), a hint (CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT). Throws CudaError.
  void set_preferred_shared_carveout(int percent) const;
  // Allows clusters of more than 8 blocks where the device has them
  // (CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED). Throws CudaError.
  void set_non_portable_cluster_size_allowed(bool allowed) const;

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
  void set_attribute(int attribute, int value, const char* name) const;
  void launch_checked(const LaunchConfig& config, void** arguments) const;

  std::shared_ptr<Context::State> m_context;
  std::shared_ptr<Module::State> m_module;
  std::shared_ptr<Function> m_function;
  std::string m_name;
};

// Device memory in a context, for tests, examples and simple applications. Move-only. A buffer of
// 0 bytes holds no memory (pointer() is 0; the driver's cuMemAlloc refuses 0 bytes).
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
