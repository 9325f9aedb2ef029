// kjit's exceptions: one Python class per C++ error type of <kjit/error.hpp>, made here when the
// module loads (a .py module of twelve classes cost `import kjit` ≈ 0.3–0.4 ms: finding, reading
// and running it), and kjit's C++ exceptions raised as them with their details as attributes (a
// CompileError's log, a StoreError's code…). Other exceptions go on to nanobind's own
// translators (std::bad_alloc → MemoryError…).
#include "bindings.hpp"
#include "text.hpp"

#include <kjit/error.hpp>

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <array>
#include <exception>
#include <initializer_list>

namespace kjit::python {

namespace {

using namespace nb::literals;

// A class: its name, whether it is also a ValueError, its doc, and its details with their
// defaults (None below: an empty str; a number: 0; `options`: an empty tuple).
struct ErrorClass {
  const char* name;
  bool value_error;
  const char* doc;
  std::initializer_list<const char*> text_details;
  std::initializer_list<const char*> number_details;
};

enum Kind { k_error, k_compile, k_option, k_arch, k_toolchain, k_cuda, k_launch, k_image, k_global, k_store,
            k_bundle, k_config, k_count };

const std::array<ErrorClass, k_count> k_classes{{
  {"Error", false, "Base of every kjit error. The message is str(error).", {}, {}},
  {"CompileError", false,
   "The compiler rejected the program: ``log`` is its full log, ``options`` what it was given.",
   {"log", "program_name", "arch"}, {}},
  {"OptionError", true, "A compile option the compiler refuses, a malformed one, or one kjit reserves (-arch).", {},
   {}},
  {"ArchError", true, "An arch that does not parse (\"sm_9x\") or that NVRTC can't build for.", {}, {}},
  {"ToolchainError", false,
   "NVRTC or nvJitLink missing or failing in itself; ``status`` is the library's result code.", {}, {"status"}},
  {"CudaError", false,
   "A CUDA driver call failed, or there is no driver or device; ``result`` is the CUresult.", {}, {"result"}},
  {"LaunchError", false, "Launch arguments that do not match the kernel's parameters.", {"kernel"},
   {"parameter", "expected", "given"}},
  {"ImageError", false, "A module image that is not a loadable cubin, fatbin or PTX; ``name`` names it.", {"name"},
   {}},
  {"GlobalError", false, "A module variable read or written with a size other than its own.", {"variable"},
   {"expected", "given"}},
  {"StoreError", false, "The cache folder or its LMDB store failed; ``code`` is the LMDB or errno code.", {},
   {"code"}},
  {"BundleError", false, "A bundle file can't be read or written, or is damaged; ``path`` names it.", {"path"}, {}},
  {"ConfigError", true, "A setting has a bad value; ``variable`` names the setting or KJIT_* variable.",
   {"variable"}, {}},
}};

// The classes, made once; kept for the life of the process (never released at exit).
std::array<PyObject*, k_count> g_types{};

// Raises kjit.<kind>(e.what()) with `details` as attributes.
template <typename... Details>
void raise(Kind kind, const std::exception& e, Details&&... details)
{
  nb::handle type = g_types[kind];
  nb::object error = type(str_of(e.what()));
  (nb::setattr(error, details.first, details.second), ...);
  PyErr_SetObject(type.ptr(), error.ptr());
}

template <typename T>
std::pair<const char*, nb::object> detail(const char* name, T&& value)
{
  return {name, nb::cast(std::forward<T>(value))};
}

void translate(const std::exception_ptr& thrown, void*)
{
  try {
    std::rethrow_exception(thrown);
  } catch (const CompileError& e) {
    raise(k_compile, e, std::make_pair("log", nb::object(str_of(e.log()))),
          std::make_pair("program_name", nb::object(str_of(e.program_name()))), detail("arch", e.arch()),
          detail("options", e.options()));
  } catch (const OptionError& e) {
    raise(k_option, e);
  } catch (const ArchError& e) {
    raise(k_arch, e);
  } catch (const ToolchainError& e) {
    raise(k_toolchain, e, detail("status", e.status()));
  } catch (const CudaError& e) {
    raise(k_cuda, e, detail("result", e.result()));
  } catch (const LaunchError& e) {
    raise(k_launch, e, detail("kernel", e.kernel()), detail("parameter", e.parameter()),
          detail("expected", e.expected()), detail("given", e.given()));
  } catch (const ImageError& e) {
    raise(k_image, e, detail("name", e.name()));
  } catch (const GlobalError& e) {
    raise(k_global, e, detail("variable", e.variable()), detail("expected", e.expected()),
          detail("given", e.given()));
  } catch (const StoreError& e) {
    raise(k_store, e, detail("code", e.code()));
  } catch (const BundleError& e) {
    raise(k_bundle, e, detail("path", e.path()));
  } catch (const ConfigError& e) {
    raise(k_config, e, detail("variable", e.variable()));
  } catch (const Error& e) {
    raise(k_error, e);
  }
  // Anything else propagates out of the catch clauses to nanobind's next translator.
}

// Error(message="", **details): the message as RuntimeError's, each detail an attribute.
void error_init(nb::handle self, nb::handle message, nb::kwargs details)
{
  nb::handle runtime_error = PyExc_RuntimeError;
  runtime_error.attr("__init__")(self, message);
  for (auto [name, value] : details) {
    nb::setattr(self, name, value);
  }
}

} // namespace

void bind_errors(nb::module_& m)
{
  for (int kind = 0; kind < k_count; ++kind) {
    const ErrorClass& spec = k_classes[kind];
    nb::dict attributes;
    for (const char* name : spec.text_details) {
      attributes[name] = "";
    }
    for (const char* name : spec.number_details) {
      attributes[name] = 0;
    }
    if (kind == k_compile) {
      attributes["options"] = nb::tuple();
    }
    nb::object bases = kind == k_error ? nb::object(nb::make_tuple(nb::handle(PyExc_RuntimeError)))
                       : spec.value_error ? nb::object(nb::make_tuple(nb::handle(g_types[k_error]), nb::handle(PyExc_ValueError)))
                                          : nb::object(nb::make_tuple(nb::handle(g_types[k_error])));
    const std::string qualified = std::string("kjit.") + spec.name;
    PyObject* type = PyErr_NewExceptionWithDoc(qualified.c_str(), spec.doc, bases.ptr(), attributes.ptr());
    if (type == nullptr) {
      throw nb::python_error();
    }
    g_types[kind] = type;
    if (kind == k_error) {
      nb::setattr(type, "__init__",
                  nb::cpp_function(error_init, nb::is_method(), "message"_a = "", "details"_a, nb::name("__init__"),
                                   nb::scope(nb::handle(type))));
    }
    m.attr(spec.name) = nb::handle(type);
  }
  nb::register_exception_translator(translate);
}

} // namespace kjit::python
