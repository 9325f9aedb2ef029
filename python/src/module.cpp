// kjit._kjit: the C++ API for Python (the package kjit re-exports it; docs/python.md).
#include "bindings.hpp"

NB_MODULE(_kjit, m)
{
  m.doc() = "kjit's C++ API, bound with nanobind. Import the package kjit, not this module.";
  kjit::python::bind_errors(m);
  kjit::python::bind_program(m);
  kjit::python::bind_binary(m);
  kjit::python::bind_cache(m);
  // The CUDA version this kjit was built for: NVIDIA's wheels for it live in nvidia/cu<major>/.
  m.attr("_cuda_major") = KJIT_PY_CUDA_MAJOR;
}
