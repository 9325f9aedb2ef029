// Where the CUDA toolkit is at run time: its include folders and the NVRTC/nvJitLink libraries.
#pragma once

#include <kjit/config.hpp>

#include <string>
#include <vector>

namespace kjit::rtc {

struct Toolkit {
  std::string root;                      // e.g. /usr/local/cuda
  std::vector<std::string> include_dirs; // <root>/include and <root>/include/cccl if present
  std::string library_dir;               // folder holding libnvrtc.so.N
  std::string nvrtc_path;                // <library_dir>/libnvrtc.so.<major>
  std::string nvrtc_builtins_path;       // <library_dir>/libnvrtc-builtins.so.<major>.<minor>, may be empty
  std::string nvjitlink_path;            // <library_dir>/libnvJitLink.so.<major>
};

// Resolves the toolkit: config.cuda_home, then $CUDA_HOME, then $CUDA_PATH, then the build's.
// Only stat()s and reads a folder; never loads a library.
Toolkit find_toolkit(const Config& config);

} // namespace kjit::rtc
