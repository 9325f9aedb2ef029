// kjit.Options (CompileOptions) and kjit.Program: immutable once made, so a Program can be read by
// C++ while the GIL is released (cache.cpp) and shared by any number of threads.
#include "bindings.hpp"
#include "text.hpp"

#include <kjit/program.hpp>

#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <tuple>

namespace kjit::python {

namespace {

using namespace nb::literals;

// {"N": 4, "FAST": None, "DEBUG": True} → -DN=4 -DFAST -DDEBUG=1: None is a define without value.
std::vector<std::pair<std::string, std::string>> defines_of(nb::handle value)
{
  std::vector<std::pair<std::string, std::string>> out;
  if (value.is_none()) {
    return out;
  }
  if (!nb::isinstance<nb::dict>(value)) {
    throw nb::type_error("defines must be a dict of name → value (None for a define without value)");
  }
  for (auto [name, text] : nb::borrow<nb::dict>(value)) {
    std::string rendered;
    if (nb::isinstance<nb::bool_>(text)) {
      rendered = nb::cast<bool>(text) ? "1" : "0";
    } else if (!text.is_none()) {
      rendered = nb::cast<std::string>(nb::str(text));
    }
    out.emplace_back(text_of(name, "a define's name"), std::move(rendered));
  }
  return out;
}

// Options, a list of option strings and Options, or None, appended to `program`.
void add_options(Program& program, nb::handle options)
{
  if (options.is_none()) {
    return;
  }
  if (nb::isinstance<CompileOptions>(options)) {
    program.with(nb::cast<const CompileOptions&>(options));
    return;
  }
  if (nb::isinstance<nb::str>(options)) {
    throw nb::type_error("options must be a kjit.Options or a list of option strings, not a single string");
  }
  for (nb::handle item : options) {
    if (nb::isinstance<CompileOptions>(item)) {
      program.with(nb::cast<const CompileOptions&>(item));
    } else {
      program.option(text_of(item, "an option"));
    }
  }
}

void add_headers(Program& program, nb::handle headers)
{
  if (headers.is_none()) {
    return;
  }
  if (!nb::isinstance<nb::dict>(headers)) {
    throw nb::type_error("headers must be a dict of include name → content");
  }
  for (auto [name, content] : nb::borrow<nb::dict>(headers)) {
    if (!nb::isinstance<nb::str>(content)) {
      throw nb::type_error("a header's content must be a str");
    }
    program.header(text_of(name, "a header's name"), nb::cast<std::string>(content));
  }
}

void complete(Program& program, nb::handle options, nb::handle name_expressions, nb::handle headers)
{
  add_options(program, options);
  for (std::string& expression : text_list(name_expressions, "name_expressions")) {
    program.name_expression(std::move(expression));
  }
  add_headers(program, headers);
}

std::string quoted(const std::string& text)
{
  return nb::cast<std::string>(nb::repr(nb::str(text.c_str(), text.size())));
}

} // namespace

void bind_program(nb::module_& m)
{
  nb::class_<CompileOptions>(m, "Options",
    "Typed compile options, rendered to NVRTC's option list in a fixed order (equal settings, "
    "equal keys). Raises kjit.OptionError for a malformed define name, an empty folder or a "
    "negative register count.")
    .def("__init__",
      [](CompileOptions* self, std::optional<std::string> std, nb::handle defines, nb::handle undefines,
         nb::handle include_dirs, nb::handle pre_includes, bool fast_math, std::optional<bool> ftz,
         std::optional<bool> prec_div, std::optional<bool> prec_sqrt, std::optional<bool> fmad, int max_registers,
         bool line_info, bool debug, nb::handle extra) {
        CompileOptions options;
        options.standard = std.value_or("");
        options.defines = defines_of(defines);
        options.undefines = text_list(undefines, "undefines");
        options.include_dirs = text_list(include_dirs, "include_dirs");
        options.pre_includes = text_list(pre_includes, "pre_includes");
        options.fast_math = fast_math;
        options.ftz = ftz;
        options.prec_div = prec_div;
        options.prec_sqrt = prec_sqrt;
        options.fmad = fmad;
        options.max_registers = max_registers;
        options.line_info = line_info;
        options.debug = debug;
        options.extra = text_list(extra, "extra");
        std::ignore = options.render();  // a malformed name is an OptionError now, not at a get()
        new (self) CompileOptions(std::move(options));
      },
      nb::kw_only(), "std"_a = nb::none(), "defines"_a = nb::none(), "undefines"_a = nb::none(),
      "include_dirs"_a = nb::none(), "pre_includes"_a = nb::none(), "fast_math"_a = false, "ftz"_a = nb::none(),
      "prec_div"_a = nb::none(), "prec_sqrt"_a = nb::none(), "fmad"_a = nb::none(), "max_registers"_a = 0,
      "line_info"_a = false, "debug"_a = false, "extra"_a = nb::none())
    .def_prop_ro("std", [](const CompileOptions& o) { return o.standard; })
    .def_prop_ro("defines", [](const CompileOptions& o) {
      nb::dict out;
      for (const auto& [name, value] : o.defines) {
        out[nb::str(name.c_str(), name.size())] = nb::str(value.c_str(), value.size());
      }
      return out;
    })
    .def_ro("undefines", &CompileOptions::undefines)
    .def_ro("include_dirs", &CompileOptions::include_dirs)
    .def_ro("pre_includes", &CompileOptions::pre_includes)
    .def_ro("fast_math", &CompileOptions::fast_math)
    .def_ro("ftz", &CompileOptions::ftz)
    .def_ro("prec_div", &CompileOptions::prec_div)
    .def_ro("prec_sqrt", &CompileOptions::prec_sqrt)
    .def_ro("fmad", &CompileOptions::fmad)
    .def_ro("max_registers", &CompileOptions::max_registers)
    .def_ro("line_info", &CompileOptions::line_info)
    .def_ro("debug", &CompileOptions::debug)
    .def_ro("extra", &CompileOptions::extra)
    .def("render", &CompileOptions::render, "The NVRTC options, one per element (kjit.OptionError if malformed).")
    .def("__repr__", [](const CompileOptions& o) {
      return "kjit.Options(" + nb::cast<std::string>(nb::repr(nb::cast(o.render()))) + ")";
    });

  nb::class_<Program>(m, "Program",
    "A CUDA C++ program: name, source, in-memory headers, options and name expressions. Immutable; "
    "safe to share between threads. Its name is part of the key, and its folder (relative to the "
    "working directory) is searched first for quoted includes.")
    .def("__init__",
      [](Program* self, nb::handle source, nb::handle name, nb::handle options, nb::handle name_expressions,
         nb::handle headers) {
        Program program = Program::from_source(text_of(name, "name"), text_of(source, "source"));
        complete(program, options, name_expressions, headers);
        new (self) Program(std::move(program));
      },
      "source"_a, nb::kw_only(), "name"_a = "program.cu", "options"_a = nb::none(),
      "name_expressions"_a = nb::none(), "headers"_a = nb::none())
    .def_static("from_file",
      [](nb::handle path, nb::handle options, nb::handle name_expressions, nb::handle headers) {
        Program program = Program::from_file(text_of(path, "path"));
        complete(program, options, name_expressions, headers);
        return program;
      },
      "path"_a, nb::kw_only(), "options"_a = nb::none(), "name_expressions"_a = nb::none(),
      "headers"_a = nb::none(),
      "The program in the file `path`, named by the path (its folder is searched for quoted includes). "
      "Raises kjit.Error if it can't be read.")
    .def_ro("name", &Program::name)
    .def_prop_ro("source", [](const Program& p) { return str_of(p.source); })
    .def_ro("headers", &Program::headers)
    .def_ro("options", &Program::options)
    .def_ro("name_expressions", &Program::name_expressions)
    .def("__repr__", [](const Program& p) {
      return "kjit.Program(name=" + quoted(p.name) + ", " + std::to_string(p.source.size()) + " bytes of source, " +
             std::to_string(p.options.size()) + " options, " + std::to_string(p.headers.size()) + " headers, " +
             std::to_string(p.name_expressions.size()) + " name expressions)";
    });
}

} // namespace kjit::python
