// A fake libcuda.so.1 for the driver contract suite: models what the CUDA driver documents and kjit
// relies on (versioned cuGetProcAddress, per-thread context stacks, primary-context reference
// counts, module/context ownership, the 48 KiB dynamic shared memory limit, launch parameter
// bytes, the shutdown at exit) and records every call. Settings come from the environment, read once:
//   KJIT_FAKE_CUDA_VERSION  driver version (default 13000)    KJIT_FAKE_CUDA_DEVICES  (default 1)
//   KJIT_FAKE_CUDA_CC       compute capability per device, e.g. 90,80 (default 90)   KJIT_FAKE_CUDA_MISSING  symbols not found
//   KJIT_FAKE_CUDA_LOG      a file every call is appended to (for child processes)
// The test reads the record through the fake_cuda_* functions at the bottom.
#include "image.hpp"

#include <cuda.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <chrono>
#include <cstring>
#include <algorithm>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

constexpr int k_device_handle_base = 100;  // CUdevice handles are not ordinals
constexpr int k_default_dynamic_shared = 48 * 1024;
constexpr int k_multiprocessors = 132;  // of every fake device

// Blocks of `block` threads resident on one multiprocessor.
int resident_blocks(int block)
{
  return block > 0 ? 2048 / block : 0;
}

struct Context {
  std::string name;
  int device = 0;
  bool primary = false;
  int retains = 0;     // primary: alive while > 0
  bool alive = false;
};

struct Function {
  fake_cuda::Kernel kernel;
  int max_dynamic_shared = 0;
  int carveout = -1;
  bool non_portable_clusters = false;
  struct Module* module = nullptr;
};

struct Module {
  std::string name;
  Context* context = nullptr;
  bool from_ptx = false;
  std::vector<std::unique_ptr<Function>> functions;
  std::map<std::string, std::pair<CUdeviceptr, std::size_t>> globals;  // in Driver::memory while loaded
};

struct Settings {
  int version = 13000;
  int devices = 1;
  std::vector<int> ccs{90};
  int cc(int ordinal) const { return ccs[std::min<std::size_t>(static_cast<std::size_t>(ordinal), ccs.size() - 1)]; }
  std::string missing;
  std::string log_file;
};

struct Driver {
  std::mutex mutex;
  Settings settings;
  bool initialized = false;
  pid_t init_pid = 0;      // the process that called cuInit: its fork()ed children must not call the driver
  bool shut_down = false;  // the exit-time shutdown ran: every call returns CUDA_ERROR_DEINITIALIZED
  bool unloaded = false;
  std::vector<std::unique_ptr<Context>> contexts;  // never freed: handles stay distinct
  std::map<Module*, std::unique_ptr<Module>> modules;
  std::map<CUdeviceptr, std::vector<unsigned char>> memory;
  std::map<CUdeviceptr, struct Context*> allocations;  // cuMemAlloc's, by context: freed with it
  CUdeviceptr next_pointer = 0x10000;
  int module_count = 0;
  int context_count = 0;
  long pushes = 0, pops = 0;
  std::vector<std::string> log;
  std::vector<std::string> violations;
  std::string last_params;
  std::map<CUstream, std::string> streams;  // made by fake_cuda_create_stream or cuStreamCreate
  std::map<CUstream, struct Context*> created_streams;  // cuStreamCreate's, by context
  struct Event {
    struct Context* context = nullptr;
    bool recorded = false;
    std::chrono::steady_clock::time_point at;
  };
  std::map<CUevent, Event> events;
};

Driver& driver()
{
  static Driver* const instance = [] {
    auto* d = new Driver;
    auto env = [](const char* name) { const char* v = std::getenv(name); return v != nullptr ? std::string(v) : ""; };
    if (!env("KJIT_FAKE_CUDA_VERSION").empty()) d->settings.version = std::stoi(env("KJIT_FAKE_CUDA_VERSION"));
    if (!env("KJIT_FAKE_CUDA_DEVICES").empty()) d->settings.devices = std::stoi(env("KJIT_FAKE_CUDA_DEVICES"));
    if (!env("KJIT_FAKE_CUDA_CC").empty()) {
      d->settings.ccs.clear();
      std::istringstream list(env("KJIT_FAKE_CUDA_CC"));
      for (std::string item; std::getline(list, item, ',');) d->settings.ccs.push_back(std::stoi(item));
    }
    d->settings.missing = "," + env("KJIT_FAKE_CUDA_MISSING") + ",";
    d->settings.log_file = env("KJIT_FAKE_CUDA_LOG");
    for (int i = 0; i < d->settings.devices; ++i) {
      auto primary = std::make_unique<Context>();
      primary->name = "P" + std::to_string(i);
      primary->device = i;
      primary->primary = true;
      d->contexts.push_back(std::move(primary));
    }
    return d;
  }();
  return *instance;
}

// Per-thread context stacks, trivially destructible: used by destructors that run at exit.
struct Stack {
  Context* entries[64];
  int depth = 0;
  bool empty() const { return depth == 0; }
  Context* back() const { return entries[depth - 1]; }
  void push_back(Context* c) { entries[depth++] = c; }
  void pop_back() { --depth; }
};
thread_local Stack t_stack;

// Appends a call to the record (and the log file); the caller holds the mutex.
void record(Driver& d, const std::string& line)
{
  if (d.unloaded) {
    std::fprintf(stderr, "fake libcuda: %s called after the library was unloaded\n", line.c_str());
  }
  d.log.push_back(line);
  if (!d.settings.log_file.empty()) {
    if (FILE* f = std::fopen(d.settings.log_file.c_str(), "a")) {
      std::fprintf(f, "%s\n", line.c_str());
      std::fclose(f);
    }
  }
}

CUresult violation(Driver& d, const std::string& what, CUresult result)
{
  d.violations.push_back(what);
  record(d, "VIOLATION " + what);
  return result;
}

Context* find_context(Driver& d, CUcontext handle)
{
  for (auto& c : d.contexts) {
    if (reinterpret_cast<CUcontext>(c.get()) == handle) {
      return c.get();
    }
  }
  return nullptr;
}

std::string context_name(Driver& d, CUcontext handle)
{
  if (handle == nullptr) return "null";
  const Context* c = find_context(d, handle);
  return c != nullptr ? c->name : "unknown";
}

Context* current(Driver& d)
{
  return t_stack.empty() ? nullptr : t_stack.back();
}

bool device_ok(Driver& d, CUdevice device)
{
  return device >= k_device_handle_base && device < k_device_handle_base + d.settings.devices;
}

Function* find_function(Driver& d, CUfunction handle)
{
  for (auto& [key, module] : d.modules) {
    for (auto& f : module->functions) {
      if (reinterpret_cast<CUfunction>(f.get()) == handle) {
        return f.get();
      }
    }
  }
  return nullptr;
}

// Unloads a module: its variables' memory goes with it.
std::map<Module*, std::unique_ptr<Module>>::iterator erase_module(Driver& d, std::map<Module*, std::unique_ptr<Module>>::iterator it)
{
  for (const auto& [name, global] : it->second->globals) {
    d.memory.erase(global.first);
  }
  return d.modules.erase(it);
}

// Modules and memory die with their context.
void destroy_context(Driver& d, Context& c)
{
  c.alive = false;
  for (auto it = d.modules.begin(); it != d.modules.end();) {
    it = it->second->context == &c ? erase_module(d, it) : std::next(it);
  }
  for (auto it = d.allocations.begin(); it != d.allocations.end();) {
    if (it->second == &c) {
      d.memory.erase(it->first);
      it = d.allocations.erase(it);
    } else {
      ++it;
    }
  }
}

CUdeviceptr allocate(Driver& d, std::size_t bytes)
{
  const CUdeviceptr pointer = d.next_pointer;
  d.memory[pointer].resize(bytes);
  d.next_pointer += (bytes + 0xffff) / 0x10000 * 0x10000 + 0x10000;
  return pointer;
}

#define LOCKED Driver& d = driver(); std::lock_guard lock(d.mutex)

// A call after the driver shut down at exit: the driver answers CUDA_ERROR_DEINITIALIZED, and
// kjit, which knows the process is exiting, should not have made it.
CUresult after_shut_down(Driver& d, const char* function)
{
  const std::string name = std::strncmp(function, "fake_", 5) == 0 ? function + 5 : function;
  return violation(d, name + " called after the driver shut down at exit", CUDA_ERROR_DEINITIALIZED);
}

// A call in a fork()ed child of the process that initialized the driver: undefined behaviour, as
// NVIDIA documents it (CUDA duplicates none of its state or threads at fork(); a child must exec
// before using CUDA). The fake answers CUDA_ERROR_NOT_INITIALIZED; the real driver may hang or crash.
CUresult in_forked_child(Driver& d, const char* function)
{
  const std::string name = std::strncmp(function, "fake_", 5) == 0 ? function + 5 : function;
  return violation(d, name + " called in a fork()ed child of the process that initialized (or began to) the driver",
                   CUDA_ERROR_NOT_INITIALIZED);
}

// An entry point of the driver: locked, and refused once the driver has shut down or in a child.
#define CALL                                                                        \
  LOCKED;                                                                           \
  if (d.init_pid != 0 && ::getpid() != d.init_pid) return in_forked_child(d, __func__); \
  if (d.shut_down) return after_shut_down(d, __func__)

// The driver's own exit-time shutdown, registered when it initializes (as libcuda does: objects
// destroyed at exit that were constructed before cuInit see CUDA_ERROR_DEINITIALIZED).
void shut_down()
{
  Driver& d = driver();
  std::lock_guard lock(d.mutex);
  d.shut_down = true;
}

// A call held inside the driver (cuModuleLoadDataEx, as a long PTX JIT is; cuInit, which takes
// seconds on a real GPU) until the test releases it; the driver's own lock is not held meanwhile.
struct Hold {
  std::mutex mutex;
  std::condition_variable changed;
  bool hold = false;
  bool held = false;  // a call is waiting in the hold
};

Hold& load_hold()
{
  static Hold* const instance = new Hold;
  return *instance;
}

Hold& init_hold()
{
  static Hold* const instance = new Hold;
  return *instance;
}

void wait_in(Hold& h)
{
  std::unique_lock lock(h.mutex);
  if (!h.hold) {
    return;
  }
  h.held = true;
  h.changed.notify_all();
  h.changed.wait(lock, [&] { return !h.hold; });
  h.held = false;
}

CUresult CUDAAPI fake_cuInit(unsigned flags)
{
  {
    LOCKED;
    if (d.init_pid == 0) {
      d.init_pid = ::getpid();  // from here on the driver's state is this process's
    }
  }
  wait_in(init_hold());
  CALL;
  record(d, "cuInit " + std::to_string(flags));
  if (!d.initialized) {
    std::atexit(shut_down);
  }
  d.initialized = true;
  return d.settings.devices == 0 ? CUDA_ERROR_NO_DEVICE : CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuDriverGetVersion(int* version)
{
  CALL;
  record(d, "cuDriverGetVersion");
  *version = d.settings.version;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuDeviceGetCount(int* count)
{
  CALL;
  record(d, "cuDeviceGetCount");
  *count = d.settings.devices;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuDeviceGet(CUdevice* device, int ordinal)
{
  CALL;
  record(d, "cuDeviceGet " + std::to_string(ordinal));
  if (ordinal < 0 || ordinal >= d.settings.devices) return CUDA_ERROR_INVALID_DEVICE;
  *device = k_device_handle_base + ordinal;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuDeviceGetAttribute(int* value, CUdevice_attribute attribute, CUdevice device)
{
  CALL;
  record(d, "cuDeviceGetAttribute " + std::to_string(attribute) + " dev=" + std::to_string(device));
  if (!device_ok(d, device)) return violation(d, "cuDeviceGetAttribute of CUdevice " + std::to_string(device), CUDA_ERROR_INVALID_DEVICE);
  switch (attribute) {
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *value = d.settings.cc(device - k_device_handle_base) / 10; break;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *value = d.settings.cc(device - k_device_handle_base) % 10; break;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *value = 227 * 1024; break;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: *value = k_default_dynamic_shared; break;
  case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *value = k_multiprocessors; break;
  case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH: *value = 1; break;
  default: *value = 0;
  }
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuDeviceGetName(char* name, int length, CUdevice device)
{
  CALL;
  record(d, "cuDeviceGetName dev=" + std::to_string(device));
  if (!device_ok(d, device)) return violation(d, "cuDeviceGetName of CUdevice " + std::to_string(device), CUDA_ERROR_INVALID_DEVICE);
  std::snprintf(name, static_cast<std::size_t>(length), "Fake GPU %d", device - k_device_handle_base);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuGetErrorName(CUresult result, const char** name)
{
  static const std::map<int, const char*> names{{0, "CUDA_SUCCESS"}, {1, "CUDA_ERROR_INVALID_VALUE"},
    {100, "CUDA_ERROR_NO_DEVICE"}, {101, "CUDA_ERROR_INVALID_DEVICE"}, {201, "CUDA_ERROR_INVALID_CONTEXT"},
    {209, "CUDA_ERROR_NO_BINARY_FOR_GPU"}, {218, "CUDA_ERROR_INVALID_PTX"}, {200, "CUDA_ERROR_INVALID_IMAGE"}, {400, "CUDA_ERROR_INVALID_HANDLE"},
    {500, "CUDA_ERROR_NOT_FOUND"}, {701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"},
    {720, "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE"}, {801, "CUDA_ERROR_NOT_SUPPORTED"}, {912, "CUDA_ERROR_INVALID_CLUSTER_SIZE"}, {4, "CUDA_ERROR_DEINITIALIZED"}};
  const auto it = names.find(result);
  *name = it != names.end() ? it->second : nullptr;
  return it != names.end() ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI fake_cuGetErrorString(CUresult result, const char** text)
{
  *text = result == CUDA_SUCCESS ? "no error" : "fake driver error";
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuDevicePrimaryCtxRetain(CUcontext* context, CUdevice device)
{
  CALL;
  record(d, "cuDevicePrimaryCtxRetain dev=" + std::to_string(device));
  if (!device_ok(d, device)) return violation(d, "cuDevicePrimaryCtxRetain of CUdevice " + std::to_string(device), CUDA_ERROR_INVALID_DEVICE);
  Context& c = *d.contexts[static_cast<std::size_t>(device - k_device_handle_base)];
  ++c.retains;
  c.alive = true;
  *context = reinterpret_cast<CUcontext>(&c);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuDevicePrimaryCtxRelease(CUdevice device)
{
  CALL;
  record(d, "cuDevicePrimaryCtxRelease dev=" + std::to_string(device));
  if (!device_ok(d, device)) return violation(d, "cuDevicePrimaryCtxRelease of CUdevice " + std::to_string(device) + " (not a device handle)", CUDA_ERROR_INVALID_DEVICE);
  Context& c = *d.contexts[static_cast<std::size_t>(device - k_device_handle_base)];
  if (c.retains == 0) return violation(d, "cuDevicePrimaryCtxRelease of " + c.name + " with no retain", CUDA_ERROR_INVALID_CONTEXT);
  if (--c.retains == 0) destroy_context(d, c);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuDevicePrimaryCtxGetState(CUdevice device, unsigned* flags, int* active)
{
  CALL;
  record(d, "cuDevicePrimaryCtxGetState dev=" + std::to_string(device));
  if (!device_ok(d, device)) return violation(d, "cuDevicePrimaryCtxGetState of CUdevice " + std::to_string(device), CUDA_ERROR_INVALID_DEVICE);
  *flags = 0;
  *active = d.contexts[static_cast<std::size_t>(device - k_device_handle_base)]->alive ? 1 : 0;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuCtxGetCurrent(CUcontext* context)
{
  CALL;
  record(d, "cuCtxGetCurrent");
  *context = reinterpret_cast<CUcontext>(current(d));
  return CUDA_SUCCESS;
}

// cuCtxGetDevice_v2 (13000): the device of `context`, or of the current one when it is null.
CUresult CUDAAPI fake_cuCtxGetDevice_v2(CUdevice* device, CUcontext context)
{
  CALL;
  record(d, "cuCtxGetDevice_v2 ctx=" + context_name(d, context));
  Context* c = context != nullptr ? find_context(d, context) : current(d);
  if (c == nullptr || !c->alive) return violation(d, "cuCtxGetDevice_v2 of a context that is not alive", CUDA_ERROR_INVALID_CONTEXT);
  *device = k_device_handle_base + c->device;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuCtxGetDevice_v1(CUdevice* device)
{
  return fake_cuCtxGetDevice_v2(device, nullptr);
}

CUresult CUDAAPI fake_cuCtxPushCurrent(CUcontext context)
{
  CALL;
  record(d, "cuCtxPushCurrent ctx=" + context_name(d, context));
  Context* c = find_context(d, context);
  if (c == nullptr || !c->alive) return CUDA_ERROR_INVALID_CONTEXT;  // a documented error, not kjit's fault
  t_stack.push_back(c);
  ++d.pushes;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuCtxPopCurrent(CUcontext* context)
{
  CALL;
  record(d, "cuCtxPopCurrent");
  if (t_stack.empty()) return violation(d, "cuCtxPopCurrent with an empty stack", CUDA_ERROR_INVALID_CONTEXT);
  if (context != nullptr) *context = reinterpret_cast<CUcontext>(t_stack.back());
  t_stack.pop_back();
  ++d.pops;
  return CUDA_SUCCESS;
}

// cuCtxSynchronize_v2 (13000) takes the context; the 2000 version syncs the current one.
CUresult CUDAAPI fake_cuCtxSynchronize_v2(CUcontext context)
{
  CALL;
  record(d, "cuCtxSynchronize_v2 ctx=" + context_name(d, context));
  Context* c = context != nullptr ? find_context(d, context) : current(d);
  if (c == nullptr || !c->alive) return violation(d, "cuCtxSynchronize_v2 of a context that is not alive", CUDA_ERROR_INVALID_CONTEXT);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuCtxSynchronize_v1()
{
  return fake_cuCtxSynchronize_v2(nullptr);
}

// The JIT options kjit may pass, as "name=value" for the record; a violation for any other, or
// for an error log buffer without its size.
bool jit_options(Driver& d, unsigned count, CUjit_option* options, void** values, std::string& text, char*& log,
                 std::size_t& log_size)
{
  for (unsigned i = 0; i < count; ++i) {
    const auto value = reinterpret_cast<std::uintptr_t>(values[i]);
    switch (options[i]) {
    case CU_JIT_ERROR_LOG_BUFFER: log = static_cast<char*>(values[i]); break;
    case CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES: log_size = value; break;
    case CU_JIT_MAX_REGISTERS: text += " maxrregcount=" + std::to_string(value); break;
    case CU_JIT_GENERATE_LINE_INFO: text += " lineinfo=" + std::to_string(value); break;
    case CU_JIT_GENERATE_DEBUG_INFO: text += " debug=" + std::to_string(value); break;
    default:
      violation(d, "cuModuleLoadDataEx with JIT option " + std::to_string(options[i]) + " kjit does not use", CUDA_ERROR_INVALID_VALUE);
      return false;
    }
  }
  if (log != nullptr && log_size == 0) {
    violation(d, "cuModuleLoadDataEx with an error log buffer of no size", CUDA_ERROR_INVALID_VALUE);
    return false;
  }
  return true;
}

CUresult CUDAAPI fake_cuModuleLoadDataEx(CUmodule* module, const void* image, unsigned count, CUjit_option* options,
                                         void** values)
{
  wait_in(load_hold());
  CALL;
  Context* c = current(d);
  if (c == nullptr || !c->alive) {
    record(d, "cuModuleLoadDataEx");
    return violation(d, "cuModuleLoadDataEx without a current context", CUDA_ERROR_INVALID_CONTEXT);
  }
  std::string settings;
  char* log = nullptr;
  std::size_t log_size = 0;
  if ((count != 0 && (options == nullptr || values == nullptr)) ||
      !jit_options(d, count, options, values, settings, log, log_size)) {
    record(d, "cuModuleLoadDataEx ctx=" + c->name + " bad options");
    return CUDA_ERROR_INVALID_VALUE;
  }
  std::vector<fake_cuda::Kernel> kernels;
  std::vector<fake_cuda::Variable> variables;
  fake_cuda::Kind kind{};
  std::string why;
  const fake_cuda::Outcome outcome =
    fake_cuda::read_image(image, d.settings.cc(c->device), kernels, variables, kind, why);
  static const char* const kinds[] = {"cubin", "ptx", "fatbin"};
  if (outcome != fake_cuda::Outcome::ok) {
    record(d, "cuModuleLoadDataEx ctx=" + c->name + " rejected: " + why);
    if (log != nullptr && outcome == fake_cuda::Outcome::invalid_ptx) {
      std::snprintf(log, log_size, "%s", why.c_str());
    }
    return outcome == fake_cuda::Outcome::invalid_ptx         ? CUDA_ERROR_INVALID_PTX
           : outcome == fake_cuda::Outcome::no_binary_for_gpu ? CUDA_ERROR_NO_BINARY_FOR_GPU
                                                               : CUDA_ERROR_INVALID_IMAGE;
  }
  auto m = std::make_unique<Module>();
  m->name = "M" + std::to_string(++d.module_count);
  m->context = c;
  m->from_ptx = kind == fake_cuda::Kind::ptx;
  for (auto& k : kernels) {
    auto f = std::make_unique<Function>();
    f->max_dynamic_shared = k_default_dynamic_shared - k.static_shared;
    f->kernel = std::move(k);
    f->module = m.get();
    m->functions.push_back(std::move(f));
  }
  for (const fake_cuda::Variable& v : variables) {
    const CUdeviceptr pointer = allocate(d, v.size);
    std::memcpy(d.memory[pointer].data(), v.init.data(), v.size);
    m->globals[v.name] = {pointer, v.size};
  }
  record(d, "cuModuleLoadDataEx ctx=" + c->name + " " + kinds[static_cast<int>(kind)] + " -> " + m->name + settings);
  *module = reinterpret_cast<CUmodule>(m.get());
  d.modules.emplace(m.get(), std::move(m));
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuModuleLoadData(CUmodule* module, const void* image)
{
  return fake_cuModuleLoadDataEx(module, image, 0, nullptr, nullptr);
}

CUresult CUDAAPI fake_cuModuleUnload(CUmodule module)
{
  CALL;
  const auto it = d.modules.find(reinterpret_cast<Module*>(module));
  if (it == d.modules.end()) {
    record(d, "cuModuleUnload unknown");
    return violation(d, "cuModuleUnload of a module that is not loaded (its context is gone, or unloaded twice)", CUDA_ERROR_INVALID_HANDLE);
  }
  record(d, "cuModuleUnload " + it->second->name + " ctx=" + (current(d) ? current(d)->name : "null"));
  if (current(d) != it->second->context) {
    return violation(d, "cuModuleUnload of " + it->second->name + " outside its context", CUDA_ERROR_INVALID_CONTEXT);
  }
  erase_module(d, it);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuModuleGetFunction(CUfunction* function, CUmodule module, const char* name)
{
  CALL;
  record(d, std::string("cuModuleGetFunction ") + name);
  const auto it = d.modules.find(reinterpret_cast<Module*>(module));
  if (it == d.modules.end()) return violation(d, "cuModuleGetFunction on a module that is not loaded", CUDA_ERROR_INVALID_HANDLE);
  for (auto& f : it->second->functions) {
    if (f->kernel.name == name) {
      *function = reinterpret_cast<CUfunction>(f.get());
      return CUDA_SUCCESS;
    }
  }
  return CUDA_ERROR_NOT_FOUND;
}

// As documented: either output may be NULL; a name the module lacks is CUDA_ERROR_NOT_FOUND.
CUresult CUDAAPI fake_cuModuleGetGlobal(CUdeviceptr* pointer, size_t* bytes, CUmodule module, const char* name)
{
  CALL;
  record(d, std::string("cuModuleGetGlobal ") + name);
  const auto it = d.modules.find(reinterpret_cast<Module*>(module));
  if (it == d.modules.end()) return violation(d, "cuModuleGetGlobal on a module that is not loaded", CUDA_ERROR_INVALID_HANDLE);
  if (current(d) != it->second->context) return violation(d, "cuModuleGetGlobal outside the module's context", CUDA_ERROR_INVALID_CONTEXT);
  const auto global = it->second->globals.find(name);
  if (global == it->second->globals.end()) return CUDA_ERROR_NOT_FOUND;
  if (pointer != nullptr) *pointer = global->second.first;
  if (bytes != nullptr) *bytes = global->second.second;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuFuncGetAttribute(int* value, CUfunction_attribute attribute, CUfunction function)
{
  CALL;
  record(d, "cuFuncGetAttribute " + std::to_string(attribute));
  Function* f = find_function(d, function);
  if (f == nullptr) return violation(d, "cuFuncGetAttribute of a function whose module is gone", CUDA_ERROR_INVALID_HANDLE);
  switch (attribute) {
  case CU_FUNC_ATTRIBUTE_NUM_REGS: *value = f->kernel.registers; break;
  case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *value = 1024; break;
  case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: *value = f->kernel.static_shared; break;
  case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *value = f->max_dynamic_shared; break;
  case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT: *value = f->carveout; break;
  case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED: *value = f->non_portable_clusters ? 1 : 0; break;
  case CU_FUNC_ATTRIBUTE_PTX_VERSION: *value = 90; break;  // PTX ISA 9.0 (CUDA 13.0)
  case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *value = d.settings.cc(f->module->context->device); break;
  default: *value = 0;
  }
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuFuncSetAttribute(CUfunction function, CUfunction_attribute attribute, int value)
{
  CALL;
  record(d, "cuFuncSetAttribute " + std::to_string(attribute) + " " + std::to_string(value));
  Function* f = find_function(d, function);
  if (f == nullptr) return violation(d, "cuFuncSetAttribute of a function whose module is gone", CUDA_ERROR_INVALID_HANDLE);
  switch (attribute) {
  case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
    if (value < 0 || value + f->kernel.static_shared > 227 * 1024) return CUDA_ERROR_INVALID_VALUE;
    f->max_dynamic_shared = value;
    return CUDA_SUCCESS;
  case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
    if (value < -1 || value > 100) return CUDA_ERROR_INVALID_VALUE;
    f->carveout = value;
    return CUDA_SUCCESS;
  case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
    if (value != 0 && value != 1) return CUDA_ERROR_INVALID_VALUE;
    f->non_portable_clusters = value != 0;
    return CUDA_SUCCESS;
  default:
    return violation(d, "cuFuncSetAttribute of attribute " + std::to_string(attribute) + " kjit does not set", CUDA_ERROR_INVALID_VALUE);
  }
}

CUresult CUDAAPI fake_cuFuncGetParamInfo(CUfunction function, size_t index, size_t* offset, size_t* size)
{
  CALL;
  record(d, "cuFuncGetParamInfo " + std::to_string(index));
  Function* f = find_function(d, function);
  if (f == nullptr) return violation(d, "cuFuncGetParamInfo of a function whose module is gone", CUDA_ERROR_INVALID_HANDLE);
  if (index >= f->kernel.params.size()) return CUDA_ERROR_INVALID_VALUE;
  *offset = f->kernel.params[index].offset;
  *size = f->kernel.params[index].size;
  return CUDA_SUCCESS;
}

// A launch, plain or cuLaunchKernelEx's: checks as the driver documents them, then the parameter
// bytes as the cubin lays them out.
CUresult launch(Driver& d, const char* api, CUfunction function, const unsigned grid[3], const unsigned block[3],
                unsigned shared, CUstream stream, void** params, void** extra, const unsigned cluster[3], bool cooperative)
{
  Function* f = find_function(d, function);
  std::ostringstream line;
  line << api << " " << (f != nullptr ? f->kernel.name : "unknown") << " grid=" << grid[0] << "x" << grid[1] << "x"
       << grid[2] << " block=" << block[0] << "x" << block[1] << "x" << block[2] << " shared=" << shared;
  const auto known_stream = d.streams.find(stream);
  if (stream != nullptr) line << " stream=" << (known_stream != d.streams.end() ? known_stream->second : "unknown");
  if (cluster != nullptr) line << " cluster=" << cluster[0] << "x" << cluster[1] << "x" << cluster[2];
  if (cooperative) line << " cooperative";
  record(d, line.str());
  if (f == nullptr) return violation(d, std::string(api) + " of a function whose module is gone", CUDA_ERROR_INVALID_HANDLE);
  if (current(d) != f->module->context) return violation(d, std::string(api) + " outside the module's context", CUDA_ERROR_INVALID_CONTEXT);
  if (stream != nullptr && known_stream == d.streams.end()) return violation(d, std::string(api) + " on a stream that does not exist", CUDA_ERROR_INVALID_HANDLE);
  if (extra != nullptr || params == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const unsigned threads = block[0] * block[1] * block[2];
  if (threads > 1024 || threads == 0) return CUDA_ERROR_INVALID_VALUE;
  if (grid[0] == 0 || grid[1] == 0 || grid[2] == 0) return CUDA_ERROR_INVALID_VALUE;  // an empty grid
  if (static_cast<int>(shared) > f->max_dynamic_shared) return CUDA_ERROR_INVALID_VALUE;
  if (cluster != nullptr) {
    if (d.settings.cc(f->module->context->device) < 90) return CUDA_ERROR_NOT_SUPPORTED;
    const unsigned size = cluster[0] * cluster[1] * cluster[2];
    if (size == 0 || size > (f->non_portable_clusters ? 16u : 8u) || grid[0] % cluster[0] != 0 ||
        grid[1] % cluster[1] != 0 || grid[2] % cluster[2] != 0) {
      return CUDA_ERROR_INVALID_CLUSTER_SIZE;
    }
  }
  if (cooperative && static_cast<long>(grid[0]) * grid[1] * grid[2] >
                       static_cast<long>(resident_blocks(static_cast<int>(threads))) * k_multiprocessors) {
    return CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
  }
  // The driver copies each parameter's bytes, as the cubin's layout says, into the constant bank.
  std::vector<unsigned char> bank(f->kernel.param_bytes);
  for (std::size_t i = 0; i < f->kernel.params.size(); ++i) {
    if (params[i] == nullptr) {
      return violation(d, std::string(api) + " of " + f->kernel.name + " without parameter " + std::to_string(i), CUDA_ERROR_INVALID_VALUE);
    }
    const fake_cuda::Param& p = f->kernel.params[i];
    if (p.offset + p.size <= bank.size()) std::memcpy(bank.data() + p.offset, params[i], p.size);
  }
  static const char* hex = "0123456789abcdef";
  d.last_params.clear();
  for (unsigned char byte : bank) {
    d.last_params += hex[byte >> 4];
    d.last_params += hex[byte & 15];
  }
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuLaunchKernel(CUfunction function, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                     unsigned bz, unsigned shared, CUstream stream, void** params, void** extra)
{
  CALL;
  const unsigned grid[3] = {gx, gy, gz};
  const unsigned block[3] = {bx, by, bz};
  return launch(d, "cuLaunchKernel", function, grid, block, shared, stream, params, extra, nullptr, false);
}

// Attributes kjit sets: a cluster dimension and cooperative; any other is a violation.
CUresult CUDAAPI fake_cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction function, void** params, void** extra)
{
  CALL;
  const unsigned grid[3] = {config->gridDimX, config->gridDimY, config->gridDimZ};
  const unsigned block[3] = {config->blockDimX, config->blockDimY, config->blockDimZ};
  unsigned cluster[3] = {0, 0, 0};
  bool has_cluster = false;
  bool cooperative = false;
  if (config->numAttrs != 0 && config->attrs == nullptr) return violation(d, "cuLaunchKernelEx with attributes but no array", CUDA_ERROR_INVALID_VALUE);
  for (unsigned i = 0; i < config->numAttrs; ++i) {
    const CUlaunchAttribute& a = config->attrs[i];
    if (a.id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) {
      has_cluster = true;
      cluster[0] = a.value.clusterDim.x;
      cluster[1] = a.value.clusterDim.y;
      cluster[2] = a.value.clusterDim.z;
    } else if (a.id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE) {
      cooperative = a.value.cooperative != 0;
    } else {
      return violation(d, "cuLaunchKernelEx with launch attribute " + std::to_string(a.id), CUDA_ERROR_INVALID_VALUE);
    }
  }
  return launch(d, "cuLaunchKernelEx", function, grid, block, config->sharedMemBytes, config->hStream, params, extra,
                has_cluster ? cluster : nullptr, cooperative);
}

// Calls the block-size → dynamic shared memory function, as the driver does, for each size it tries.
CUresult CUDAAPI fake_cuOccupancyMaxPotentialBlockSize(int* min_grid, int* block, CUfunction function,
                                                       CUoccupancyB2DSize shared_for, size_t shared, int limit)
{
  CALL;
  record(d, "cuOccupancyMaxPotentialBlockSize" + std::string(shared_for != nullptr ? " with a function" : ""));
  Function* f = find_function(d, function);
  if (f == nullptr) return violation(d, "occupancy of a function whose module is gone", CUDA_ERROR_INVALID_HANDLE);
  // The largest block (a multiple of 32, up to the limit) whose shared memory fits the kernel's limit.
  int best = 0;
  for (int size = 32; size <= (limit > 0 && limit < 1024 ? limit : 1024); size += 32) {
    const std::size_t wanted = shared_for != nullptr ? shared_for(size) : shared;
    if (static_cast<long>(wanted) <= f->max_dynamic_shared) best = size;
  }
  if (best == 0) return CUDA_ERROR_INVALID_VALUE;
  *block = best;
  *min_grid = resident_blocks(best) * k_multiprocessors;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, CUfunction function, int block, size_t)
{
  CALL;
  record(d, "cuOccupancyMaxActiveBlocksPerMultiprocessor");
  if (find_function(d, function) == nullptr) return violation(d, "occupancy of a function whose module is gone", CUDA_ERROR_INVALID_HANDLE);
  *blocks = resident_blocks(block);
  return CUDA_SUCCESS;
}

// The shared memory of one multiprocessor (228 KiB) split between `blocks` blocks, less the static part.
CUresult CUDAAPI fake_cuOccupancyAvailableDynamicSMemPerBlock(size_t* bytes, CUfunction function, int blocks, int block)
{
  CALL;
  record(d, "cuOccupancyAvailableDynamicSMemPerBlock " + std::to_string(blocks) + " " + std::to_string(block));
  Function* f = find_function(d, function);
  if (f == nullptr) return violation(d, "occupancy of a function whose module is gone", CUDA_ERROR_INVALID_HANDLE);
  if (blocks <= 0 || block <= 0 || blocks > resident_blocks(block)) return CUDA_ERROR_INVALID_VALUE;
  const int per_block = 228 * 1024 / blocks - 1024 - f->kernel.static_shared;
  *bytes = static_cast<size_t>(std::max(0, std::min(per_block, 227 * 1024 - f->kernel.static_shared)));
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuOccupancyMaxActiveClusters(int* clusters, CUfunction function, const CUlaunchConfig* config)
{
  CALL;
  record(d, "cuOccupancyMaxActiveClusters");
  Function* f = find_function(d, function);
  if (f == nullptr) return violation(d, "occupancy of a function whose module is gone", CUDA_ERROR_INVALID_HANDLE);
  unsigned size = 0;
  for (unsigned i = 0; i < config->numAttrs; ++i) {
    if (config->attrs[i].id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) {
      const auto& c = config->attrs[i].value.clusterDim;
      size = c.x * c.y * c.z;
    }
  }
  if (size == 0 || size > 8) return CUDA_ERROR_INVALID_CLUSTER_SIZE;
  const int threads = static_cast<int>(config->blockDimX * config->blockDimY * config->blockDimZ);
  *clusters = resident_blocks(threads) * k_multiprocessors / static_cast<int>(size);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuMemAlloc(CUdeviceptr* pointer, size_t bytes)
{
  CALL;
  record(d, "cuMemAlloc " + std::to_string(bytes));
  if (current(d) == nullptr || !current(d)->alive) return violation(d, "cuMemAlloc without a current context", CUDA_ERROR_INVALID_CONTEXT);
  if (bytes == 0) return CUDA_ERROR_INVALID_VALUE;  // as cuda.h documents
  *pointer = allocate(d, bytes);
  d.allocations[*pointer] = current(d);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuMemFree(CUdeviceptr pointer)
{
  CALL;
  record(d, "cuMemFree");
  if (d.allocations.erase(pointer) == 0 || d.memory.erase(pointer) == 0) {
    return violation(d, "cuMemFree of memory not allocated (or freed with its context)", CUDA_ERROR_INVALID_VALUE);
  }
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuMemcpyHtoD(CUdeviceptr to, const void* from, size_t bytes)
{
  CALL;
  record(d, "cuMemcpyHtoD " + std::to_string(bytes));
  const auto it = d.memory.find(to);
  if (it == d.memory.end() || it->second.size() < bytes) return CUDA_ERROR_INVALID_VALUE;
  std::memcpy(it->second.data(), from, bytes);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuMemcpyDtoH(void* to, CUdeviceptr from, size_t bytes)
{
  CALL;
  record(d, "cuMemcpyDtoH " + std::to_string(bytes));
  const auto it = d.memory.find(from);
  if (it == d.memory.end() || it->second.size() < bytes) return CUDA_ERROR_INVALID_VALUE;
  std::memcpy(to, it->second.data(), bytes);
  return CUDA_SUCCESS;
}

// Streams and events: made in the current context, checked on use (a stream or event of another
// context, one destroyed, destroyed twice: violations), timed by the host's clock.
CUresult CUDAAPI fake_cuStreamCreate(CUstream* stream, unsigned int flags)
{
  CALL;
  record(d, "cuStreamCreate flags=" + std::to_string(flags));
  if (current(d) == nullptr || !current(d)->alive) return violation(d, "cuStreamCreate without a current context", CUDA_ERROR_INVALID_CONTEXT);
  *stream = reinterpret_cast<CUstream>(new char);
  d.streams[*stream] = "S" + std::to_string(d.streams.size() + 1);
  d.created_streams[*stream] = current(d);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuStreamDestroy(CUstream stream)
{
  CALL;
  record(d, "cuStreamDestroy");
  if (d.created_streams.erase(stream) == 0) return violation(d, "cuStreamDestroy of a stream cuStreamCreate did not make (or destroyed)", CUDA_ERROR_INVALID_HANDLE);
  d.streams.erase(stream);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuStreamSynchronize(CUstream stream)
{
  CALL;
  record(d, "cuStreamSynchronize");
  if (stream != nullptr && d.streams.count(stream) == 0) return violation(d, "cuStreamSynchronize of a stream that does not exist", CUDA_ERROR_INVALID_HANDLE);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuEventCreate(CUevent* event, unsigned int flags)
{
  CALL;
  record(d, "cuEventCreate flags=" + std::to_string(flags));
  if (current(d) == nullptr || !current(d)->alive) return violation(d, "cuEventCreate without a current context", CUDA_ERROR_INVALID_CONTEXT);
  *event = reinterpret_cast<CUevent>(new char);
  d.events[*event].context = current(d);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuEventDestroy(CUevent event)
{
  CALL;
  record(d, "cuEventDestroy");
  if (d.events.erase(event) == 0) return violation(d, "cuEventDestroy of an event that does not exist", CUDA_ERROR_INVALID_HANDLE);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuEventRecord(CUevent event, CUstream stream)
{
  CALL;
  record(d, "cuEventRecord");
  const auto it = d.events.find(event);
  if (it == d.events.end()) return violation(d, "cuEventRecord of an event that does not exist", CUDA_ERROR_INVALID_HANDLE);
  if (stream != nullptr && d.streams.count(stream) == 0) return violation(d, "cuEventRecord on a stream that does not exist", CUDA_ERROR_INVALID_HANDLE);
  const auto owner = d.created_streams.find(stream);
  if (owner != d.created_streams.end() && owner->second != it->second.context) {
    return CUDA_ERROR_INVALID_HANDLE;  // the driver's answer for a stream of another context
  }
  it->second.recorded = true;
  it->second.at = std::chrono::steady_clock::now();
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuEventSynchronize(CUevent event)
{
  CALL;
  record(d, "cuEventSynchronize");
  if (d.events.count(event) == 0) return violation(d, "cuEventSynchronize of an event that does not exist", CUDA_ERROR_INVALID_HANDLE);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuEventElapsedTime(float* ms, CUevent start, CUevent end)
{
  CALL;
  record(d, "cuEventElapsedTime");
  const auto a = d.events.find(start);
  const auto b = d.events.find(end);
  if (a == d.events.end() || b == d.events.end()) return violation(d, "cuEventElapsedTime of an event that does not exist", CUDA_ERROR_INVALID_HANDLE);
  if (!a->second.recorded || !b->second.recorded) return CUDA_ERROR_INVALID_HANDLE;  // as the driver answers
  *ms = std::chrono::duration<float, std::milli>(b->second.at - a->second.at).count();
  return CUDA_SUCCESS;
}

struct Entry {
  const char* name;
  int since;  // the version whose ABI `function` has
  void* function;
};

// Newest version first: cuGetProcAddress returns the newest ABI not newer than what is asked.
const Entry k_entries[] = {
  {"cuInit", 2000, reinterpret_cast<void*>(&fake_cuInit)},
  {"cuDriverGetVersion", 2020, reinterpret_cast<void*>(&fake_cuDriverGetVersion)},
  {"cuDeviceGetCount", 2000, reinterpret_cast<void*>(&fake_cuDeviceGetCount)},
  {"cuDeviceGet", 2000, reinterpret_cast<void*>(&fake_cuDeviceGet)},
  {"cuDeviceGetAttribute", 2000, reinterpret_cast<void*>(&fake_cuDeviceGetAttribute)},
  {"cuDeviceGetName", 2000, reinterpret_cast<void*>(&fake_cuDeviceGetName)},
  {"cuGetErrorName", 6000, reinterpret_cast<void*>(&fake_cuGetErrorName)},
  {"cuGetErrorString", 6000, reinterpret_cast<void*>(&fake_cuGetErrorString)},
  {"cuDevicePrimaryCtxRetain", 7000, reinterpret_cast<void*>(&fake_cuDevicePrimaryCtxRetain)},
  {"cuDevicePrimaryCtxRelease", 11000, reinterpret_cast<void*>(&fake_cuDevicePrimaryCtxRelease)},
  {"cuDevicePrimaryCtxGetState", 7000, reinterpret_cast<void*>(&fake_cuDevicePrimaryCtxGetState)},
  {"cuCtxGetCurrent", 4000, reinterpret_cast<void*>(&fake_cuCtxGetCurrent)},
  {"cuCtxGetDevice", 13000, reinterpret_cast<void*>(&fake_cuCtxGetDevice_v2)},
  {"cuCtxGetDevice", 2000, reinterpret_cast<void*>(&fake_cuCtxGetDevice_v1)},
  {"cuCtxPushCurrent", 4000, reinterpret_cast<void*>(&fake_cuCtxPushCurrent)},
  {"cuCtxPopCurrent", 4000, reinterpret_cast<void*>(&fake_cuCtxPopCurrent)},
  {"cuCtxSynchronize", 13000, reinterpret_cast<void*>(&fake_cuCtxSynchronize_v2)},
  {"cuCtxSynchronize", 2000, reinterpret_cast<void*>(&fake_cuCtxSynchronize_v1)},
  {"cuModuleLoadData", 2000, reinterpret_cast<void*>(&fake_cuModuleLoadData)},
  {"cuModuleLoadDataEx", 2010, reinterpret_cast<void*>(&fake_cuModuleLoadDataEx)},
  {"cuModuleUnload", 2000, reinterpret_cast<void*>(&fake_cuModuleUnload)},
  {"cuModuleGetFunction", 2000, reinterpret_cast<void*>(&fake_cuModuleGetFunction)},
  {"cuModuleGetGlobal", 3020, reinterpret_cast<void*>(&fake_cuModuleGetGlobal)},
  {"cuFuncGetAttribute", 2020, reinterpret_cast<void*>(&fake_cuFuncGetAttribute)},
  {"cuFuncSetAttribute", 9000, reinterpret_cast<void*>(&fake_cuFuncSetAttribute)},
  {"cuFuncGetParamInfo", 12040, reinterpret_cast<void*>(&fake_cuFuncGetParamInfo)},
  {"cuLaunchKernel", 4000, reinterpret_cast<void*>(&fake_cuLaunchKernel)},
  {"cuLaunchKernelEx", 11060, reinterpret_cast<void*>(&fake_cuLaunchKernelEx)},
  {"cuOccupancyAvailableDynamicSMemPerBlock", 10020, reinterpret_cast<void*>(&fake_cuOccupancyAvailableDynamicSMemPerBlock)},
  {"cuOccupancyMaxActiveClusters", 11070, reinterpret_cast<void*>(&fake_cuOccupancyMaxActiveClusters)},
  {"cuOccupancyMaxPotentialBlockSize", 6050, reinterpret_cast<void*>(&fake_cuOccupancyMaxPotentialBlockSize)},
  {"cuOccupancyMaxActiveBlocksPerMultiprocessor", 6050,
   reinterpret_cast<void*>(&fake_cuOccupancyMaxActiveBlocksPerMultiprocessor)},
  {"cuMemAlloc", 3020, reinterpret_cast<void*>(&fake_cuMemAlloc)},
  {"cuMemFree", 3020, reinterpret_cast<void*>(&fake_cuMemFree)},
  {"cuMemcpyHtoD", 3020, reinterpret_cast<void*>(&fake_cuMemcpyHtoD)},
  {"cuMemcpyDtoH", 3020, reinterpret_cast<void*>(&fake_cuMemcpyDtoH)},
  {"cuStreamCreate", 2000, reinterpret_cast<void*>(&fake_cuStreamCreate)},
  {"cuStreamDestroy", 4000, reinterpret_cast<void*>(&fake_cuStreamDestroy)},
  {"cuStreamSynchronize", 2000, reinterpret_cast<void*>(&fake_cuStreamSynchronize)},
  {"cuEventCreate", 2000, reinterpret_cast<void*>(&fake_cuEventCreate)},
  {"cuEventDestroy", 4000, reinterpret_cast<void*>(&fake_cuEventDestroy)},
  {"cuEventRecord", 2000, reinterpret_cast<void*>(&fake_cuEventRecord)},
  {"cuEventSynchronize", 2000, reinterpret_cast<void*>(&fake_cuEventSynchronize)},
  {"cuEventElapsedTime", 12080, reinterpret_cast<void*>(&fake_cuEventElapsedTime)},
};

std::string joined(const std::vector<std::string>& lines)
{
  std::string text;
  for (const auto& line : lines) text += line + "\n";
  return text;
}

// Runs when the library is unmapped (dlclose, or at exit after every atexit handler and static
// destructor): a call after it would be a call into an unloaded library.
__attribute__((destructor)) void mark_unloaded()
{
  driver().unloaded = true;
}

void hold(Hold& h)
{
  std::lock_guard lock(h.mutex);
  h.hold = true;
}

// True once a call waits in the hold; false when the hold was released first (the call the test
// waits for never came: its caller releases the hold when it returns, so a test fails, not hangs).
bool wait_held(Hold& h)
{
  std::unique_lock lock(h.mutex);
  h.changed.wait(lock, [&] { return h.held || !h.hold; });
  return h.held;
}

void release(Hold& h)
{
  std::lock_guard lock(h.mutex);
  h.hold = false;
  h.changed.notify_all();
}

} // namespace

extern "C" {

// Holds the next cuModuleLoadDataEx (or cuInit) calls inside the driver until released. A wait
// for a held call returns false when the hold is released first.
__attribute__((visibility("default"))) void fake_cuda_hold_loads() { hold(load_hold()); }
__attribute__((visibility("default"))) bool fake_cuda_wait_load_held() { return wait_held(load_hold()); }
__attribute__((visibility("default"))) void fake_cuda_release_loads() { release(load_hold()); }
__attribute__((visibility("default"))) void fake_cuda_hold_init() { hold(init_hold()); }
__attribute__((visibility("default"))) bool fake_cuda_wait_init_held() { return wait_held(init_hold()); }
__attribute__((visibility("default"))) void fake_cuda_release_init() { release(init_hold()); }


// As documented (cuda.h 13.0): a version newer than the driver is CUDA_ERROR_INVALID_VALUE;
// otherwise the newest ABI of the symbol not newer than `version`. A symbol the driver lacks, or
// one newer than `version`, is CUDA_SUCCESS with a NULL pointer (the status says which).
__attribute__((visibility("default"))) CUresult CUDAAPI cuGetProcAddress_v2(const char* symbol, void** pfn, int version,
                                                                             cuuint64_t, CUdriverProcAddressQueryResult* found)
{
  CALL;
  record(d, std::string("cuGetProcAddress ") + symbol + " " + std::to_string(version));
  *pfn = nullptr;
  if (found != nullptr) *found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  if (version > d.settings.version) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (d.settings.missing.find("," + std::string(symbol) + ",") != std::string::npos) {
    return CUDA_SUCCESS;
  }
  bool known = false;
  for (const Entry& e : k_entries) {
    if (std::strcmp(e.name, symbol) != 0) continue;
    known = true;
    if (e.since <= version) {
      *pfn = e.function;
      if (found != nullptr) *found = CU_GET_PROC_ADDRESS_SUCCESS;
      return CUDA_SUCCESS;
    }
  }
  if (known && found != nullptr) *found = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
  return CUDA_SUCCESS;
}

// --- For the tests (dlsym'd from the loaded library). ---

__attribute__((visibility("default"))) const char* fake_cuda_log()
{
  LOCKED;
  static thread_local std::string text;
  text = joined(d.log);
  return text.c_str();
}

__attribute__((visibility("default"))) void fake_cuda_clear_log()
{
  LOCKED;
  d.log.clear();
  d.violations.clear();
}

__attribute__((visibility("default"))) const char* fake_cuda_violations()
{
  LOCKED;
  static thread_local std::string text;
  text = joined(d.violations);
  return text.c_str();
}

__attribute__((visibility("default"))) const char* fake_cuda_last_params()
{
  LOCKED;
  static thread_local std::string text;
  text = d.last_params;
  return text.c_str();
}

__attribute__((visibility("default"))) int fake_cuda_primary_retains(int ordinal)
{
  LOCKED;
  return d.contexts[static_cast<std::size_t>(ordinal)]->retains;
}

__attribute__((visibility("default"))) int fake_cuda_loaded_modules()
{
  LOCKED;
  return static_cast<int>(d.modules.size());
}

__attribute__((visibility("default"))) long fake_cuda_pushes()
{
  LOCKED;
  return d.pushes;
}

__attribute__((visibility("default"))) long fake_cuda_pops()
{
  LOCKED;
  return d.pops;
}

__attribute__((visibility("default"))) int fake_cuda_stack_depth()
{
  return t_stack.depth;
}

// An application-owned context (like cuCtxCreate), current on this thread afterwards.
__attribute__((visibility("default"))) void* fake_cuda_create_context(int ordinal)
{
  LOCKED;
  auto c = std::make_unique<Context>();
  c->name = "C" + std::to_string(++d.context_count);
  c->device = ordinal;
  c->alive = true;
  t_stack.push_back(c.get());
  d.contexts.push_back(std::move(c));
  return d.contexts.back().get();
}

// cuCtxDestroy: the context and its modules are gone.
__attribute__((visibility("default"))) void fake_cuda_destroy_context(void* context)
{
  LOCKED;
  Context* c = find_context(d, static_cast<CUcontext>(context));
  destroy_context(d, *c);
  int kept = 0;
  for (int i = 0; i < t_stack.depth; ++i) {
    if (t_stack.entries[i] != c) t_stack.entries[kept++] = t_stack.entries[i];
  }
  t_stack.depth = kept;
}

// A stream of the current context, as an application's cuStreamCreate would give (named S1, S2…).
__attribute__((visibility("default"))) void* fake_cuda_create_stream()
{
  LOCKED;
  auto* handle = reinterpret_cast<CUstream>(new char);
  d.streams[handle] = "S" + std::to_string(d.streams.size() + 1);
  return handle;
}

// The driver's exit-time shutdown, now (as if it had registered it after kjit's handler).
__attribute__((visibility("default"))) void fake_cuda_shut_down()
{
  shut_down();
}

// cuCtxSetCurrent, as the CUDA runtime uses it (nullptr pops nothing, it empties the top).
__attribute__((visibility("default"))) void fake_cuda_set_current(void* context)
{
  LOCKED;
  if (!t_stack.empty()) t_stack.pop_back();
  if (context != nullptr) t_stack.push_back(static_cast<Context*>(context));
}

} // extern "C"
