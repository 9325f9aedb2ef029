// kjit: CUDA C++ text → cached, loadable GPU kernels, in-process. The one header to include.
#pragma once

#include <kjit/arch.hpp>
#include <kjit/binary.hpp>
#include <kjit/cache.hpp>
#include <kjit/compile.hpp>
#include <kjit/config.hpp>
#include <kjit/cubin.hpp>
#include <kjit/driver.hpp>
#include <kjit/error.hpp>
#include <kjit/launch.hpp>
#include <kjit/module.hpp>
#include <kjit/program.hpp>
#include <kjit/script.hpp>
#include <kjit/stream.hpp>
#include <kjit/uncached.hpp>
#include <kjit/version.hpp>
