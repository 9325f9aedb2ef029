// The benchmark's sections; each measures side by side in one run and adds rows to the report.
#pragma once

#include "report.hpp"

namespace bench {

struct Options {
  int scale_entries = 100000;  // entries for the scale section
  int repetitions = 30;        // process spawns per measurement
  bool quick = false;          // --quick: small sizes, for CI (checks the properties, not speed)
};

void batch_compiles(Report& report, const Options& options);
void code_parity(Report& report, const Options& options);
void cold_compiles(Report& report, const Options& options);
void memory_tier(Report& report, const Options& options);
void mirror_writes(Report& report, const Options& options);
void heavy_headers(Report& report, const Options& options);
void header_tracking(Report& report, const Options& options);
void warm_fresh_process(Report& report, const Options& options);
void scale_and_files(Report& report, const Options& options);
void single_flight(Report& report, const Options& options);
void process_warm_start(Report& report, const Options& options);
void process_start(Report& report, const Options& options);

} // namespace bench
