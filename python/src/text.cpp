// Python values to the C++ API's text.
#include "text.hpp"

namespace kjit::python {

std::string text_of(nb::handle value, const char* what)
{
  if (nb::isinstance<nb::str>(value)) {
    return nb::cast<std::string>(value);
  }
  if (nb::hasattr(value, "__fspath__")) {
    nb::object path = value.attr("__fspath__")();
    if (nb::isinstance<nb::str>(path)) {
      return nb::cast<std::string>(path);
    }
  }
  throw nb::type_error((std::string(what) + " must be a str or an os.PathLike, not " +
                        nb::cast<std::string>(nb::type_name(value.type())))
                         .c_str());
}

std::vector<std::string> text_list(nb::handle value, const char* what)
{
  std::vector<std::string> out;
  if (value.is_none()) {
    return out;
  }
  if (nb::isinstance<nb::str>(value) || nb::isinstance<nb::bytes>(value)) {
    // A lone string is iterable too: refused rather than split into characters.
    throw nb::type_error((std::string(what) + " must be a list of strings, not a single string").c_str());
  }
  for (nb::handle item : value) {
    out.push_back(text_of(item, what));
  }
  return out;
}

Arch arch_of(nb::handle value)
{
  if (value.is_none()) {
    return Arch{};
  }
  return Arch::parse(text_of(value, "arch"));
}

nb::str str_of(std::string_view text)
{
  PyObject* decoded = PyUnicode_DecodeUTF8(text.data(), static_cast<Py_ssize_t>(text.size()), "replace");
  if (decoded == nullptr) {
    throw nb::python_error();  // no memory
  }
  return nb::steal<nb::str>(decoded);
}

} // namespace kjit::python
