// Programs and cache folders the benchmarks share.
#pragma once

#include <kjit/kjit.hpp>

#include <string>

namespace bench {

// A saxpy-like kernel padded with a comment to about `bytes` of source; `salt` makes it unique.
kjit::Program kernel_program(int salt, std::size_t bytes = 4096);

// A kernel including cuda_fp16.h, cuda_bf16.h and cuda/std headers.
kjit::Program heavy_program(int salt);

// A fresh folder under $TMPDIR (or /tmp), removed by the destructor.
class Folder {
public:
  explicit Folder(const std::string& tag);
  ~Folder();
  const std::string& path() const { return m_path; }

private:
  std::string m_path;
};

// A Config for a cache in `dir` (mirror off unless asked: benchmarks measure the store).
kjit::Config cache_config(const std::string& dir, bool mirror = false);

// Fills the cache in `dir` with `count` entries of distinct 4 KiB programs, all carrying one real
// compiled binary, written in batches straight into LMDB (compiling 100 000 kernels would take hours).
void populate(const std::string& dir, int count, int first_salt = 0);

// Runs `command` with /bin/sh; returns its standard output.
std::string run(const std::string& command);

// Total bytes of the files below `dir`.
std::size_t disk_bytes(const std::string& dir);

} // namespace bench
