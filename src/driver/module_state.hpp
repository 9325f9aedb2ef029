// The shared state behind kjit::Context, kjit::Module and kjit::Kernel.
#pragma once

#include "driver/driver_api.hpp"
#include "driver/kernel_layout.hpp"

#include <kjit/module.hpp>

#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace kjit {

// One per CUfunction: the limit it was raised to and its parameter layout.
struct Kernel::Function {
  CUfunction function = nullptr;
  const driver::KernelLayout* layout = nullptr;  // owned by the module; nullptr when unknown (PTX)
  std::mutex mutex;
  bool shared_raised = false;  // MAX_DYNAMIC_SHARED_SIZE_BYTES set (the opt-in limit, or the application's)
  // MAX_DYNAMIC_SHARED_SIZE_BYTES as last read or set; -1 until a launch asks for dynamic shared memory.
  std::atomic<int> dynamic_shared_limit{-1};
};

struct Module::State {
  CUcontext context = nullptr;
  CUmodule module = nullptr;
  std::string program;  // for messages
  std::string device;   // "device 0"
  std::vector<std::pair<std::string, std::string>> lowered_names;
  bool from_ptx = false;
  std::string kind;     // "cubin", "ptx", "fatbin"
  std::map<std::string, driver::KernelLayout> layouts;  // by lowered name, from the cubin
  std::mutex mutex;
  std::map<std::string, std::shared_ptr<Kernel::Function>> functions;  // by lowered name
  ~State();  // unloads inside its context if that is still alive, never throws
};

struct Context::State {
  CUcontext context = nullptr;
  int device = 0;            // the ordinal
  CUdevice device_handle{};  // what cuDevicePrimaryCtxRelease takes
  bool primary = false;      // a primary context this State holds one retain of
  std::mutex mutex;
  std::map<std::string, std::shared_ptr<Module::State>> modules;  // by cache key
  ~State();  // unloads the modules, releases a primary context, leaves the registry
};

} // namespace kjit
