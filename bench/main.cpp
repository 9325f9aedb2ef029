// kjit's benchmark: warm, cold, scale and concurrency, side by side in one run. Exits 1 when a
// property a section checks (a compile count, a hit count, no compiler loaded) does not hold.
// Usage: kjit_bench [--quick] [--json FILE] [--scale N] [--repetitions N] [--only SECTION,...]
#include "children.hpp"
#include "sections.hpp"

#include <kjit/kjit.hpp>

#include <cstdio>
#include <cstring>
#include <map>
#include <sstream>
#include <string>
#include <vector>

int main(int argc, char** argv)
{
  const std::vector<std::string> args(argv + 1, argv + argc);
  try {
    if (const int child = bench::run_child(args); child >= 0) {
      return child;
    }
    bench::Options options;
    std::string json = "bench-results.json";
    std::string only;
    for (std::size_t i = 0; i < args.size(); ++i) {
      const bool has_value = i + 1 < args.size();
      if (args[i] == "--quick") {
        options.quick = true;
        options.scale_entries = 1000;
        options.repetitions = 3;
      } else if (args[i] == "--json" && has_value) {
        json = args[++i];
      } else if (args[i] == "--scale" && has_value) {
        options.scale_entries = std::stoi(args[++i]);
      } else if (args[i] == "--repetitions" && has_value) {
        options.repetitions = std::stoi(args[++i]);
      } else if (args[i] == "--only" && has_value) {
        only = "," + args[++i] + ",";
      } else {
        std::fprintf(stderr,
                     "usage: kjit_bench [--quick] [--json FILE] [--scale N] [--repetitions N] [--only a,b]\n");
        return 2;
      }
    }
    const kjit::ToolchainVersions v = kjit::toolchain_versions();
    std::ostringstream machine;
    machine << "kjit " << kjit::version() << ", NVRTC " << v.nvrtc_major << "." << v.nvrtc_minor << ", nvJitLink "
            << v.nvjitlink_major << "." << v.nvjitlink_minor << ", driver: "
            << (kjit::driver_status().available ? "available" : "none");
    std::printf("%s\n", machine.str().c_str());
    const std::vector<std::pair<const char*, void (*)(bench::Report&, const bench::Options&)>> sections{
      {"parity", bench::code_parity},        {"batch", bench::batch_compiles},
      {"cold", bench::cold_compiles},        {"memory", bench::memory_tier},
      {"warm", bench::warm_fresh_process},   {"scale", bench::scale_and_files},
      {"heavy", bench::heavy_headers},       {"flight", bench::single_flight},
      {"headers", bench::header_tracking},   {"start", bench::process_warm_start},
      {"mirror", bench::mirror_writes},
    };
    bench::Report report;
    for (const auto& [name, run] : sections) {
      if (only.empty() || only.find(std::string(",") + name + ",") != std::string::npos) {
        run(report, options);
      }
    }
    report.print();
    report.write_json(json, machine.str());
    std::printf("results written to %s\n", json.c_str());
    // Speed targets are reported; properties (compile counts, hits, libraries loaded) must hold.
    const std::vector<std::string> failed = report.failed_properties();
    for (const std::string& name : failed) {
      std::fprintf(stderr, "kjit_bench: property failed: %s\n", name.c_str());
    }
    return failed.empty() ? 0 : 1;
  } catch (const kjit::Error& e) {
    std::fprintf(stderr, "kjit_bench: %s\n", e.what());
    return 1;
  }
}
