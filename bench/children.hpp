// Modes the benchmark runs in as a child process (fresh process measurements).
#pragma once

#include <string>
#include <vector>

namespace bench {

// Dispatches `--child-*` modes; returns the exit code, or -1 if `args` is no child mode.
int run_child(const std::vector<std::string>& args);

// Spawns this benchmark with `args` and returns its wall time (spawn to exit) in microseconds;
// its standard output goes to `output` when not null.
double spawn_self(const std::vector<std::string>& args, std::string* output = nullptr);

// A "key: value" line's value from a child's output (0 if absent).
double field(const std::string& output, const std::string& key);

} // namespace bench
