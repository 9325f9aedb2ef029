// kjit's demo: compiles the example kernels for several archs and shows what each stage cost.
// Usage: kjit_demo EXAMPLES_DIR
#include <kjit/kjit.hpp>

#include <cstdio>
#include <string>
#include <vector>

namespace {

struct Example {
  const char* file;
  std::vector<std::string> name_expressions;
};

} // namespace

int main(int argc, char** argv)
{
  const std::string dir = argc > 1 ? argv[1] : "examples";
  const Example examples[] = {
    {"saxpy.cu", {}},
    {"scale.cu", {"scale<float>", "scale<double>"}},
    {"half_axpy.cu", {}},
  };
  const char* archs[] = {"sm_80", "sm_90", "sm_120"};

  std::printf("kjit %s\n", kjit::version());
  const kjit::DriverStatus& driver = kjit::driver_status();
  std::printf("driver: %s\n\n", driver.available ? "available" : ("unavailable: " + driver.reason).c_str());
  std::printf("%-14s %-7s %9s %9s %9s %9s %9s %9s\n", "program", "arch", "ptx B", "cubin B", "load ms", "nvrtc ms",
              "link ms", "total ms");
  try {
    for (const Example& example : examples) {
      kjit::Program program = kjit::program_from_file(dir + "/" + example.file);
      program.name_expressions = example.name_expressions;
      for (const char* arch : archs) {
        const kjit::Binary binary = kjit::compile(program, kjit::Arch::parse(arch));
        std::string why;
        const int sm = kjit::Arch::parse(arch).number();
        if (!kjit::check_cubin(binary.cubin, sm, why)) {
          std::fprintf(stderr, "bad cubin for %s %s: %s\n", example.file, arch, why.c_str());
          return 1;
        }
        std::printf("%-14s %-7s %9zu %9zu %9.1f %9.1f %9.1f %9.1f\n", example.file, arch, binary.ptx.size(),
                    binary.cubin.size(), binary.timings.load_ms, binary.timings.nvrtc_ms, binary.timings.link_ms,
                    binary.timings.total_ms);
        for (const auto& [expression, lowered] : binary.lowered_names) {
          std::printf("    %s -> %s\n", expression.c_str(), lowered.c_str());
        }
      }
    }
  } catch (const kjit::Error& e) {
    std::fprintf(stderr, "demo failed: %s\n", e.what());
    return 1;
  }
  return 0;
}
