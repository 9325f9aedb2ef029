// Section [9]: a fresh process to a cached kernel's cubin, next to the floor (a C++ program not
// linked to kjit that reads one 4 KiB file) and to a program that only loads libkjit.
#include "children.hpp"
#include "sections.hpp"
#include "workload.hpp"

#include "util/file.hpp"

#include <cstdio>

namespace bench {

namespace {

constexpr const char* k_section = "process start";

// The runs of one program: wall and CPU times in ms, minor page faults.
struct Runs {
  std::vector<double> wall_ms;
  std::vector<double> cpu_ms;
  std::vector<double> faults;
  int failed = 0;  // runs that did not exit 0

  void add(const ChildRun& run)
  {
    wall_ms.push_back(run.wall_us / 1000.0);
    cpu_ms.push_back(run.cpu_us / 1000.0);
    faults.push_back(static_cast<double>(run.minor_faults));
    failed += run.exit_code != 0;
  }
};

} // namespace

void process_start(Report& report, const Options& options)
{
  std::printf("\n[9] process start: spawn to cubin, next to a C++ program (not linked to kjit) that reads one "
              "4 KiB file\n");
  Folder folder("start");
  populate(folder.path(), 100);
  const std::string file = folder.path() + "/one_file";
  kjit::util::write_file_atomic(file, std::string(4096, 'x'));
  const kjit::Program program = kernel_program(0);
  const std::string floor = beside_self("kjit_bench_floor");
  const std::string start = beside_self("kjit_bench_start");
  const std::vector<std::string> hit_args{folder.path(), program.name, program.source};
  std::vector<std::string> check_args{"check"};
  check_args.insert(check_args.end(), hit_args.begin(), hit_args.end());
  std::vector<std::string> measured_args{"hit"};
  measured_args.insert(measured_args.end(), hit_args.begin(), hit_args.end());

  std::string checked;
  spawn_program(start, check_args, &checked);  // also pages the store into the OS cache
  Runs floor_runs;
  Runs posix_floor_runs;
  Runs load_runs;
  Runs hit_runs;
  std::vector<double> hundred;
  // Interleaved, so that the machine's load falls on all three alike.
  const int repetitions = options.repetitions * 10;
  for (int r = 0; r < repetitions; ++r) {
    floor_runs.add(spawn_program(floor, {file}));
    posix_floor_runs.add(spawn_program(floor, {"--posix", file}));
    load_runs.add(spawn_program(start, {}));
    hit_runs.add(spawn_program(start, measured_args));
    if (r % 10 == 0) {
      hundred.push_back(spawn_self({"--child-warm", folder.path(), "100"}) / 1000.0);
    }
  }
  const double floor_ms = percentile(floor_runs.wall_ms, 50);
  const double load_ms = percentile(load_runs.wall_ms, 50);
  const double hit_ms = percentile(hit_runs.wall_ms, 50);
  report.note(k_section, "floor: C++ program reading one 4 KiB file, p50", floor_ms, "ms");
  report.note(k_section, "libkjit loaded, nothing done, p50", load_ms, "ms");
  report.note(k_section, "spawn to cubin, 1 cached kernel (public API), p50", hit_ms, "ms");
  report.check(k_section, "loading libkjit: over the floor", load_ms - floor_ms, "ms", 0.5);
  report.check(k_section, "spawn to cubin: over the floor", hit_ms - floor_ms, "ms", 0.5);
  report.note(k_section, "spawn to cubin: kjit's own work (over loading libkjit)", hit_ms - load_ms, "ms");
  report.note(k_section, "spawn to cubin / floor", floor_ms > 0 ? hit_ms / floor_ms : 0, "x");
  // The floor reads its file with std::ifstream, whose locale set-up a hit never does: the same
  // program reading with open/read is the stricter floor, shown beside it (not a target).
  const double posix_floor_ms = percentile(posix_floor_runs.wall_ms, 50);
  report.note(k_section, "floor read with open/read, no iostreams, p50", posix_floor_ms, "ms");
  report.note(k_section, "spawn to cubin: over the open/read floor", hit_ms - posix_floor_ms, "ms");
  report.note(k_section, "CPU time (user + system) p50: floor", percentile(floor_runs.cpu_ms, 50), "ms");
  report.note(k_section, "CPU time p50: open/read floor", percentile(posix_floor_runs.cpu_ms, 50), "ms");
  report.note(k_section, "CPU time p50: libkjit loaded", percentile(load_runs.cpu_ms, 50), "ms");
  report.note(k_section, "CPU time p50: spawn to cubin", percentile(hit_runs.cpu_ms, 50), "ms");
  report.note(k_section, "minor page faults p50: floor", percentile(floor_runs.faults, 50), "count");
  report.note(k_section, "minor page faults p50: open/read floor", percentile(posix_floor_runs.faults, 50), "count");
  report.note(k_section, "minor page faults p50: libkjit loaded", percentile(load_runs.faults, 50), "count");
  report.note(k_section, "minor page faults p50: spawn to cubin", percentile(hit_runs.faults, 50), "count");
  report.note(k_section, "spawn to cubins, 100 cached kernels (kjit_bench), p50", percentile(hundred, 50), "ms");
  report.require(k_section, "runs that failed (floor, load, hit: a miss or no cubin)",
                 floor_runs.failed + posix_floor_runs.failed + load_runs.failed + hit_runs.failed, "count", 0);
  report.require(k_section, "cached kernel served by a disk hit, no compile",
                 field(checked, "disk_hits") == 1 && field(checked, "compiles") == 0 ? 1 : 0, "bool", 1);
  report.require(k_section, "warm process loaded NVRTC or nvJitLink",
                 field(checked, "nvrtc_loaded") + field(checked, "nvjitlink_loaded"), "count", 0);
}

} // namespace bench
