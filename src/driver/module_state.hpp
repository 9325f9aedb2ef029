// The shared state behind kjit::Context and kjit::Module.
#pragma once

#include "driver/driver_api.hpp"

#include <kjit/module.hpp>

#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace kjit {

struct Module::State {
  CUcontext context = nullptr;
  CUmodule module = nullptr;
  std::string program;  // for messages
  std::string device;   // "device 0 (NVIDIA H100)"
  std::vector<std::pair<std::string, std::string>> lowered_names;
  bool from_ptx = false;
  ~State();  // unloads inside its context, never throws
};

struct Context::State {
  CUcontext context = nullptr;
  int device = 0;
  bool primary = false;
  std::mutex mutex;
  std::map<std::string, std::shared_ptr<Module::State>> modules;  // by cache key
  ~State();  // unloads the modules, then releases a primary context
};

} // namespace kjit
