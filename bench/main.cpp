// kjit's benchmark: warm, cold, scale and concurrency, side by side in one run. Exits 1 when a
// property a section checks (a compile count, a hit count, no compiler loaded) does not hold.
// Usage: kjit_bench --help.
#include "children.hpp"
#include "sections.hpp"

#include <kjit/kjit.hpp>

#include <cstdio>
#include <cstring>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace {

constexpr const char* k_usage =
  "usage: kjit_bench [--quick] [--json FILE] [--scale N] [--repetitions N] [--only SECTION,...]\n"
  "  --quick          small sizes and 3 repetitions (checks the properties; its speeds are no results)\n"
  "  --json FILE      where the results go (default bench-results.json)\n"
  "  --scale N        entries of the scale section (default 100000)\n"
  "  --repetitions N  process spawns per measurement (default 30)\n"
  "  --only LIST      comma-separated sections: parity batch cold memory warm scale heavy flight headers\n"
  "                   start mirror\n"
  "  --help           this text\n"
  "Exit status: 0, 1 when a property failed, 2 for a bad command line.\n";

// A bad command line: the message and the usage on stderr; main exits 2.
struct UsageError {
  std::string message;
};

int positive(const std::string& option, const std::string& text)
{
  std::size_t used = 0;
  int value = 0;
  try {
    value = std::stoi(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || value <= 0) {
    throw UsageError{option + " needs a positive number, not '" + text + "'"};
  }
  return value;
}

} // namespace

int main(int argc, char** argv)
{
  const std::vector<std::string> args(argv + 1, argv + argc);
  try {
    if (const int child = bench::run_child(args); child >= 0) {
      return child;
    }
    const std::vector<std::pair<const char*, void (*)(bench::Report&, const bench::Options&)>> sections{
      {"parity", bench::code_parity},        {"batch", bench::batch_compiles},
      {"cold", bench::cold_compiles},        {"memory", bench::memory_tier},
      {"warm", bench::warm_fresh_process},   {"scale", bench::scale_and_files},
      {"heavy", bench::heavy_headers},       {"flight", bench::single_flight},
      {"headers", bench::header_tracking},   {"start", bench::process_start},
      {"mirror", bench::mirror_writes},
    };
    bench::Options options;
    std::string json = "bench-results.json";
    std::string only;
    for (std::size_t i = 0; i < args.size(); ++i) {
      const std::string& option = args[i];
      const auto value = [&]() -> const std::string& {
        if (i + 1 >= args.size() || args[i + 1].rfind("--", 0) == 0) {
          throw UsageError{option + " needs a value"};
        }
        return args[++i];
      };
      if (option == "--help" || option == "-h") {
        std::fputs(k_usage, stdout);
        return 0;
      } else if (option == "--quick") {
        options.quick = true;
        options.scale_entries = 1000;
        options.repetitions = 3;
      } else if (option == "--json") {
        json = value();
      } else if (option == "--scale") {
        options.scale_entries = positive(option, value());
      } else if (option == "--repetitions") {
        options.repetitions = positive(option, value());
      } else if (option == "--only") {
        only = "," + value() + ",";
        for (std::size_t at = 1; at < only.size();) {
          const std::size_t comma = only.find(',', at);
          const std::string name = only.substr(at, comma - at);
          at = comma + 1;
          bool known = false;
          for (const auto& section : sections) {
            known = known || name == section.first;
          }
          if (!known) {
            throw UsageError{"--only: no section '" + name + "'"};
          }
        }
      } else {
        throw UsageError{"unknown option '" + option + "'"};
      }
    }
    const kjit::ToolchainVersions v = kjit::toolchain_versions();
    std::ostringstream machine;
    machine << "kjit " << kjit::version() << ", NVRTC " << v.nvrtc_major << "." << v.nvrtc_minor << ", nvJitLink "
            << v.nvjitlink_major << "." << v.nvjitlink_minor << ", driver: "
            << (kjit::driver_status().available ? "available" : "none");
    std::printf("%s\n", machine.str().c_str());
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
  } catch (const UsageError& e) {
    std::fprintf(stderr, "kjit_bench: %s\n%s", e.message.c_str(), k_usage);
    return 2;
  } catch (const kjit::Error& e) {
    std::fprintf(stderr, "kjit_bench: %s\n", e.what());
    return 1;
  }
}
