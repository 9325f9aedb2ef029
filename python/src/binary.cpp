// kjit.Binary: a compiled program's cubin, PTX, lowered names, log and timings, and each kernel's
// resources read from the cubin (KernelInfo, KernelParam), no GPU needed.
#include "bindings.hpp"
#include "text.hpp"

#include <kjit/binary.hpp>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/vector.h>

namespace kjit::python {

using namespace nb::literals;

void bind_binary(nb::module_& m)
{
  nb::class_<KernelParam>(m, "KernelParam", "One kernel parameter as laid out in the parameter constant bank.")
    .def_ro("index", &KernelParam::index, "Position in the kernel's parameter list.")
    .def_ro("offset", &KernelParam::offset, "Bytes from the start of the parameter block.")
    .def_ro("size", &KernelParam::size, "Bytes.")
    .def("__repr__", [](const KernelParam& p) {
      return "kjit.KernelParam(index=" + std::to_string(p.index) + ", offset=" + std::to_string(p.offset) +
             ", size=" + std::to_string(p.size) + ")";
    });

  nb::class_<KernelInfo>(m, "KernelInfo", "One kernel of a cubin and the resources it uses, read from the ELF.")
    .def_ro("name", &KernelInfo::name, "Mangled (lowered) name, as in the symbol table.")
    .def_ro("registers", &KernelInfo::registers, "Registers per thread.")
    .def_ro("static_shared_bytes", &KernelInfo::static_shared_bytes, "The kernel's own __shared__ data.")
    .def_ro("local_bytes", &KernelInfo::local_bytes, "Per-thread stack frame.")
    .def_ro("const_bytes", &KernelInfo::const_bytes, "The module's user __constant__ data.")
    .def_ro("max_threads", &KernelInfo::max_threads, "__launch_bounds__ threads (x*y*z), 0 if not set.")
    .def_ro("params", &KernelInfo::params, "The parameters (list of KernelParam), by index.")
    .def_ro("param_bytes", &KernelInfo::param_bytes, "Total size of the parameter block.")
    .def_ro("max_stack_bytes", &KernelInfo::max_stack_bytes, "Per-thread stack including callees.")
    .def("__repr__", [](const KernelInfo& k) {
      return "kjit.KernelInfo(name='" + k.name + "', registers=" + std::to_string(k.registers) +
             ", static_shared_bytes=" + std::to_string(k.static_shared_bytes) + ", params=" +
             std::to_string(k.params.size()) + ", param_bytes=" + std::to_string(k.param_bytes) + ")";
    });

  nb::class_<StageTimings>(m, "StageTimings", "Wall time of each stage of the compile that made a binary, in ms.")
    .def_ro("load_ms", &StageTimings::load_ms, "Loading NVRTC/nvJitLink (a process's first compile only).")
    .def_ro("nvrtc_ms", &StageTimings::nvrtc_ms, "Source → PTX (and the cubin, for a real arch).")
    .def_ro("link_ms", &StageTimings::link_ms, "PTX or LTO IR → cubin by nvJitLink (0 when NVRTC made it).")
    .def_ro("total_ms", &StageTimings::total_ms, "The whole compile.")
    .def("__repr__", [](const StageTimings& t) {
      return "kjit.StageTimings(total_ms=" + std::to_string(t.total_ms) + ")";
    });

  nb::class_<BinaryRef>(m, "Binary",
    "A program compiled for one arch: cubin, PTX, lowered names, log. Immutable; shared with the "
    "cache that made it.")
    .def_prop_ro("arch", [](const BinaryRef& b) { return b.binary->arch; }, "'sm_90', or 'compute_90' (PTX only).")
    .def_prop_ro("cubin",
      [](BinaryRef& b) {
        if (!b.cubin.is_valid()) {
          b.cubin = nb::bytes(b.binary->cubin.data(), b.binary->cubin.size());
        }
        return b.cubin;
      },
      nb::sig("def cubin(self) -> bytes"), "The cubin (ELF) as bytes; empty for a virtual arch.")
    .def_prop_ro("ptx",
      [](BinaryRef& b) {
        if (!b.ptx.is_valid()) {
          b.ptx = str_of(b.binary->ptx);
        }
        return b.ptx;
      },
      nb::sig("def ptx(self) -> str"), "The PTX text; empty for an -dlto program.")
    .def_prop_ro("log", [](const BinaryRef& b) { return str_of(b.binary->log); }, "The compiler's warnings, maybe empty.")
    .def_prop_ro("cubin_path", [](const BinaryRef& b) { return b.binary->cubin_path; },
      "Which step made the cubin: 'nvrtc', 'nvjitlink-lto' or 'none'.")
    .def_prop_ro("lowered_names",
      [](const BinaryRef& b) {
        nb::dict out;
        for (const auto& [expression, lowered] : b.binary->lowered_names) {
          out[str_of(expression)] = str_of(lowered);
        }
        return out;
      },
      nb::sig("def lowered_names(self) -> dict[str, str]"),
      "Name expression → lowered (mangled) name, in the program's order.")
    .def("lowered_name",
      [](const BinaryRef& b, std::string_view expression) -> const std::string& {
        for (const auto& [given, lowered] : b.binary->lowered_names) {
          if (given == expression) {
            return lowered;
          }
        }
        throw nb::key_error(("'" + std::string(expression) + "' is not a name expression of this program").c_str());
      },
      "expression"_a, "The lowered name of a name expression; KeyError if it was not one.")
    .def_prop_ro("timings", [](const BinaryRef& b) { return b.binary->timings; },
      "The compile that made it (maybe in another process, long ago): what a hit saves.")
    .def_prop_ro("kernels", [](const BinaryRef& b) { return b.binary->kernels(); },
      "Every kernel of the cubin with its resources (list of KernelInfo); empty without a cubin.")
    .def("kernel", [](const BinaryRef& b, std::string_view name) { return b.binary->kernel(name); }, "name"_a,
      "The KernelInfo of a kernel by lowered name or name expression; None if there is none.")
    .def("__repr__", [](const BinaryRef& b) {
      return "kjit.Binary(arch='" + b.binary->arch + "', cubin=" + std::to_string(b.binary->cubin.size()) +
             " bytes, ptx=" + std::to_string(b.binary->ptx.size()) + " bytes, " +
             std::to_string(b.binary->lowered_names.size()) + " lowered names)";
    });
}

} // namespace kjit::python
