// Modes the benchmark runs in as a child process (fresh process measurements).
#pragma once

#include <string>
#include <vector>

namespace bench {

// Dispatches `--child-*` modes; returns the exit code, or -1 if `args` is no child mode.
int run_child(const std::vector<std::string>& args);

// What a child process cost, from wait4().
struct ChildRun {
  double wall_us = -1;     // posix_spawn to exit; -1 if it could not be started
  double cpu_us = 0;       // user + system time
  long minor_faults = 0;   // page faults served without I/O (mapping libraries, touching pages)
  int exit_code = -1;      // -1 unless it exited normally
};

// Spawns the program `path` with `args` and waits for it; its standard output goes to `output`
// when not null.
ChildRun spawn_program(const std::string& path, const std::vector<std::string>& args, std::string* output = nullptr);

// Spawns this benchmark with `args` and returns its wall time (spawn to exit) in microseconds;
// its standard output goes to `output` when not null.
double spawn_self(const std::vector<std::string>& args, std::string* output = nullptr);

// The path of the program `name` built beside this benchmark (e.g. "kjit_bench_floor").
std::string beside_self(const std::string& name);

// A "key: value" line's value from a child's output (0 if absent).
double field(const std::string& output, const std::string& key);

} // namespace bench
