// Where the CUDA toolkit is at run time: its include folders and the NVRTC/nvJitLink libraries.
#pragma once

#include <kjit/config.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace kjit::rtc {

// What one stat() of a file saw, kept so that the toolchain's file identity, made right after
// find_toolkit(), does not stat the same files again (cache::toolchain_context).
struct FileSeen {
  enum class State { not_seen, missing, present } state = State::not_seen;
  long long size = 0;
  long long mtime_sec = 0;
  long long mtime_nsec = 0;
  unsigned long long inode = 0;
};

// One stat() of `path` (missing for an empty path).
FileSeen stat_file(const std::string& path);

struct Toolkit {
  std::string root;                      // e.g. /usr/local/cuda
  std::vector<std::string> include_dirs; // <root>/include and <root>/include/cccl if present
  std::string library_dir;               // folder holding libnvrtc.so.N
  std::string nvrtc_path;                // <library_dir>/libnvrtc.so.<major>
  std::string nvrtc_builtins_path;       // <library_dir>/libnvrtc-builtins.so.<major>.<minor>, may be empty
  std::string nvjitlink_path;            // <library_dir>/libnvJitLink.so.<major>
  FileSeen nvrtc_seen;                   // nvrtc_path when find_toolkit() ran (not_seen if not stat()ed)
  FileSeen nvrtc_builtins_seen;          // nvrtc_builtins_path, likewise
};

// Resolves the toolkit: config.cuda_home, then $CUDA_HOME, then $CUDA_PATH, then the build's.
// Only stat()s and reads a folder; never loads a library.
Toolkit find_toolkit(const Config& config);

// find_toolkit(), kept for the toolkit's root (config.cuda_home / $CUDA_HOME / $CUDA_PATH / the
// build's) until the next call for that root. A Cache calls it once, when it makes its key context
// (cache::toolchain_context): a new Cache sees a changed toolkit, its misses stat nothing.
Toolkit remember_toolkit(const Config& config);

// The toolkit remember_toolkit() last found for config's root, else find_toolkit() (not kept).
// What the miss path uses (implicit_options, nvrtc_for, nvjitlink_for): no stat once remembered.
Toolkit toolkit_for(const Config& config);

// How many times find_toolkit() ran in this process (a test checks that a miss runs it not).
std::uint64_t toolkit_finds() noexcept;

} // namespace kjit::rtc
