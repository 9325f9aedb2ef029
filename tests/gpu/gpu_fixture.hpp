// The GPU tests' fixture: each test gets its own cache folder (removed after).
#pragma once

#include <kjit/kjit.hpp>

#include <cstdlib>
#include <string>
#include <unistd.h>

namespace kjit::test {

struct GpuFixture {
  GpuFixture()
  {
    char pattern[] = "/tmp/kjit-gpu-XXXXXX";
    dir = ::mkdtemp(pattern);
    kjit::option::cache_dir(dir);
  }
  ~GpuFixture()
  {
    kjit::option::reset();
    std::system(("rm -rf '" + dir + "'").c_str());
  }
  std::string dir;
};

} // namespace kjit::test
