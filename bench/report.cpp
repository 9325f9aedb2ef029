// The printed table and the JSON file of a benchmark run.
#include "report.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>

namespace bench {

double percentile(std::vector<double>& samples, double p)
{
  if (samples.empty()) {
    return 0;
  }
  std::sort(samples.begin(), samples.end());
  const auto index = static_cast<std::size_t>(p / 100.0 * static_cast<double>(samples.size() - 1) + 0.5);
  return samples[std::min(index, samples.size() - 1)];
}

void Report::add(Row row)
{
  std::printf("  %-58s %12.3f %-5s %-14s %s\n", row.name.c_str(), row.value, row.unit.c_str(), row.target.c_str(),
              row.met < 0 ? "" : (row.met ? "met" : "NOT MET"));
  std::fflush(stdout);
  m_rows.push_back(std::move(row));
}

void Report::check(const std::string& section, const std::string& name, double value, const std::string& unit,
                   double limit, bool at_least)
{
  char target[64];
  std::snprintf(target, sizeof target, "%s %g %s", at_least ? ">=" : "<=", limit, unit.c_str());
  add({section, name, value, unit, target, at_least ? value >= limit : value <= limit});
}

void Report::require(const std::string& section, const std::string& name, double value, const std::string& unit,
                     double expected)
{
  char target[64];
  std::snprintf(target, sizeof target, "= %g (required)", expected);
  Row row{section, name, value, unit, target, value == expected ? 1 : 0};
  row.property = true;
  add(std::move(row));
}

std::vector<std::string> Report::failed_properties() const
{
  std::vector<std::string> failed;
  for (const Row& row : m_rows) {
    if (row.property && row.met == 0) {
      failed.push_back(row.section + ": " + row.name);
    }
  }
  return failed;
}

void Report::note(const std::string& section, const std::string& name, double value, const std::string& unit)
{
  add({section, name, value, unit, "", -1});
}

void Report::print() const
{
  int met = 0;
  int missed = 0;
  for (const Row& row : m_rows) {
    met += row.met == 1;
    missed += row.met == 0;
  }
  std::printf("\ntargets: %d met, %d not met\n", met, missed);
}

void Report::write_json(const std::string& path, const std::string& machine) const
{
  std::ofstream out(path);
  out << "{\n  \"machine\": \"" << machine << "\",\n  \"rows\": [\n";
  for (std::size_t i = 0; i < m_rows.size(); ++i) {
    const Row& r = m_rows[i];
    out << "    {\"section\": \"" << r.section << "\", \"name\": \"" << r.name << "\", \"value\": " << r.value
        << ", \"unit\": \"" << r.unit << "\", \"target\": \"" << r.target << "\", \"met\": "
        << (r.met < 0 ? "null" : (r.met ? "true" : "false")) << "}" << (i + 1 < m_rows.size() ? "," : "") << "\n";
  }
  out << "  ]\n}\n";
}

} // namespace bench
