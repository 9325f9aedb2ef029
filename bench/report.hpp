// Benchmark bookkeeping: timing, percentiles, the printed table and the JSON file.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace bench {

using Clock = std::chrono::steady_clock;

inline double us_since(Clock::time_point start)
{
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

// p-th percentile (0..100) of `samples` (sorted in place).
double percentile(std::vector<double>& samples, double p);

struct Row {
  std::string section;  // e.g. "warm, memory tier"
  std::string name;     // what was measured
  double value;
  std::string unit;     // "us", "ms", "%", "x", "bytes", "count"
  std::string target;   // e.g. "<= 1 us", empty if none
  int met;              // 1 met, 0 not met, -1 no target
  bool property = false; // a correctness property (not a speed target): failing it fails the run
};

class Report {
public:
  void add(Row row);
  // Adds a row whose target is `value <= limit` (or >= when `at_least`).
  void check(const std::string& section, const std::string& name, double value, const std::string& unit, double limit,
             bool at_least = false);
  // Adds a row for a property that must hold exactly (value == expected, e.g. a compile count);
  // a failed property makes the benchmark exit non-zero.
  void require(const std::string& section, const std::string& name, double value, const std::string& unit,
               double expected);
  // The properties that did not hold (their names).
  std::vector<std::string> failed_properties() const;
  void note(const std::string& section, const std::string& name, double value, const std::string& unit);
  void print() const;
  void write_json(const std::string& path, const std::string& machine) const;

private:
  std::vector<Row> m_rows;
};

} // namespace bench
