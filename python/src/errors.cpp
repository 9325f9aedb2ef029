// kjit's C++ exceptions raised as the Python classes of kjit/_errors.py, with their details as
// attributes (a CompileError's log, a StoreError's code…). Other exceptions go on to nanobind's
// own translators (std::bad_alloc → MemoryError…).
#include "bindings.hpp"
#include "text.hpp"

#include <kjit/error.hpp>

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <exception>

namespace kjit::python {

namespace {

using namespace nb::literals;

// kjit._errors, imported once; kept for the life of the process (never released at exit).
PyObject* g_errors = nullptr;

// Raises kjit.<name>(e.what(), **details).
template <typename... Details>
void raise(const char* name, const std::exception& e, Details&&... details)
{
  nb::object type = nb::borrow(g_errors).attr(name);
  nb::object error = type(str_of(e.what()), std::forward<Details>(details)...);
  PyErr_SetObject(type.ptr(), error.ptr());
}

void translate(const std::exception_ptr& thrown, void*)
{
  try {
    std::rethrow_exception(thrown);
  } catch (const CompileError& e) {
    raise("CompileError", e, "log"_a = str_of(e.log()), "program_name"_a = str_of(e.program_name()), "arch"_a = e.arch(),
          "options"_a = e.options());
  } catch (const OptionError& e) {
    raise("OptionError", e);
  } catch (const ArchError& e) {
    raise("ArchError", e);
  } catch (const ToolchainError& e) {
    raise("ToolchainError", e, "status"_a = e.status());
  } catch (const CudaError& e) {
    raise("CudaError", e, "result"_a = e.result());
  } catch (const LaunchError& e) {
    raise("LaunchError", e, "kernel"_a = e.kernel(), "parameter"_a = e.parameter(), "expected"_a = e.expected(),
          "given"_a = e.given());
  } catch (const ImageError& e) {
    raise("ImageError", e, "name"_a = e.name());
  } catch (const GlobalError& e) {
    raise("GlobalError", e, "variable"_a = e.variable(), "expected"_a = e.expected(), "given"_a = e.given());
  } catch (const StoreError& e) {
    raise("StoreError", e, "code"_a = e.code());
  } catch (const BundleError& e) {
    raise("BundleError", e, "path"_a = e.path());
  } catch (const ConfigError& e) {
    raise("ConfigError", e, "variable"_a = e.variable());
  } catch (const Error& e) {
    raise("Error", e);
  }
  // Anything else propagates out of the catch clauses to nanobind's next translator.
}

} // namespace

void bind_errors(nb::module_& m)
{
  nb::module_ errors = nb::module_::import_("kjit._errors");
  g_errors = errors.release().ptr();
  nb::register_exception_translator(translate);
  m.attr("_errors") = nb::borrow(g_errors);
}

} // namespace kjit::python
