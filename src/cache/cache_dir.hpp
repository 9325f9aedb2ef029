// Creating and vetting the cache folder before anything is stored in it.
#pragma once

#include <kjit/config.hpp>

#include <string>

namespace kjit::cache {

struct CacheDir {
  std::string path;
  std::string store_dir;
  bool writable = false;
};

// Creates config.cache_dir with mode 0700 if missing, refuses a folder owned by another user or
// writable by group/others unless config.shared_cache (StoreError with an explanation), notices a
// read-only folder, and moves the store to a node-local folder (one warning) when the cache
// folder is on a network filesystem.
CacheDir open_cache_dir(const Config& config);

// Logs "warning: <message>" once per process and message.
void warn_once(const std::string& message);

// Removes `relative` (a folder) below `cache_dir` without following symlinks.
void remove_tree(const std::string& cache_dir, const std::string& relative);

} // namespace kjit::cache
