// Cross-process single flight: one process compiles a key while the others wait for its result.
#pragma once

#include "util/hash.hpp"
#include "util/unique_handle.hpp"

#include <string>

namespace kjit::cache {

// An open-file-description lock (F_OFD_SETLKW) on one byte of <store>/compile.lock chosen by the
// key. OFD locks belong to this object, not to the process, so threads and processes exclude
// each other alike, and the lock goes away with the holder (even after kill -9).
// Two keys that share the byte only wait for each other needlessly.
class CompileLock {
public:
  CompileLock() = default;  // holds nothing
  CompileLock(const std::string& store_dir, const util::Sha256& key);
  bool held() const noexcept { return static_cast<bool>(m_fd); }

private:
  util::UniqueFd m_fd;  // closing it releases the lock
};

} // namespace kjit::cache
