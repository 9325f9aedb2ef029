// The pieces of the extension module kjit._kjit: one bind_* per part of the C++ API, and the
// Python-side holders of the C++ objects the parts share.
#pragma once

#include <kjit/cache.hpp>

#include <nanobind/nanobind.h>

#include <memory>

namespace kjit::python {

namespace nb = nanobind;

// A Binary as Python holds it: shared with the cache's memory tier, never copied. Its bytes and
// text are made into Python objects on first use and kept (a Binary is immutable).
struct BinaryRef {
  std::shared_ptr<const Binary> binary;
  nb::object cubin;  // bytes, on first use
  nb::object ptx;    // str, on first use
};

// A Cache as Python holds it: the default cache is shared with C++ callers of default_cache().
struct CacheRef {
  std::shared_ptr<Cache> cache;
};

void bind_errors(nb::module_& m);   // errors.cpp: kjit's exceptions, Error and its subclasses
void bind_program(nb::module_& m);  // program.cpp: Options, Program
void bind_binary(nb::module_& m);   // binary.cpp: Binary, KernelInfo, KernelParam, StageTimings
void bind_cache(nb::module_& m);    // cache.cpp: Cache, Lookup, Source, get, lookup, compile…

} // namespace kjit::python
