// What each opaque handle of <kjit/kjit.h> holds: the C++ objects it wraps, and the C views of
// them whose pointers the C API hands out (valid as long as the handle).
#pragma once

#include <kjit/cache.hpp>
#include <kjit/config.hpp>
#include <kjit/kjit.h>
#include <kjit/module.hpp>
#include <kjit/program.hpp>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

struct kjit_config {
  kjit::Config config;
};

struct kjit_cache {
  std::shared_ptr<kjit::Cache> cache;
};

struct kjit_program {
  kjit::Program program;
};

// A kernel of a binary as the C API shows it: its KernelInfo and the C copies of its parameters.
struct kjit_kernel_view {
  kjit::KernelInfo info;
  std::vector<kjit_kernel_param> params;
};

struct kjit_binary {
  std::shared_ptr<const kjit::Binary> binary;
  // The cubin's kernels, read on first use (most callers never ask): the ELF is not parsed on the
  // lookup path. Guarded by `kernels_mutex`, as a binary handle is shared between threads.
  mutable std::mutex kernels_mutex;
  mutable bool kernels_read = false;
  mutable std::vector<kjit_kernel_view> kernels;
};

struct kjit_module {
  kjit::Context context;
  kjit::Module module;
};

struct kjit_kernel {
  kjit::Kernel kernel;
};
