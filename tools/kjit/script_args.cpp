// Parsing a script's description from the command line (script_args.hpp).
#include "script_args.hpp"

#include "cache_args.hpp"
#include "program_args.hpp"

#include <algorithm>

namespace kjit::cli {

std::vector<std::string> split(const std::string& text, char separator)
{
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (;;) {
    const auto at = text.find(separator, start);
    parts.push_back(text.substr(start, at == std::string::npos ? std::string::npos : at - start));
    if (at == std::string::npos) {
      return parts;
    }
    start = at + 1;
  }
}

void add_script_options(po::options_description& visible, po::options_description& hidden,
                        po::positional_options_description& positional)
{
  add_program_options(visible, hidden, positional);
  visible.add_options()
    ("name", po::value<std::string>()->required(), "the script's name (its folder under scripts/)")
    ("space", po::value<std::vector<std::string>>()->composing()->required(), "a tuning parameter: NAME=V1,V2,…")
    ("sizes", po::value<std::string>()->default_value("n"), "names of the dynamic sizes, comma-separated")
    ("jobs,j", po::value<unsigned>()->default_value(0), "worker processes (0: one per core)");
}

BuiltScript build_from_arguments(const po::variables_map& vm)
{
  // Empty values are bad usage (docs/cli.md): an empty name filed the script under "script", an
  // empty size name reached the library's check (exit 1).
  if (vm["name"].as<std::string>().empty()) {
    throw UsageError{"--name needs the script's name, not \"\"", ""};
  }
  const std::vector<std::string> size_names = split(vm["sizes"].as<std::string>(), ',');
  if (size_names.empty() || std::find(size_names.begin(), size_names.end(), "") != size_names.end()) {
    throw UsageError{"--sizes " + vm["sizes"].as<std::string>() + ": expected names, comma-separated (e.g. n,m)", ""};
  }
  Script script;
  const Program program = program_from_arguments(vm, script.arch);
  if (program.name_expressions.size() > 1) {
    throw UsageError{"give one --name-expr pattern (e.g. 'kern<{BLOCK}>')", ""};
  }
  script.name = vm["name"].as<std::string>();
  script.program_name = program.name;
  script.source = program.source;
  script.headers = program.headers;  // --header NAME=FILE
  script.options = program.options;
  script.name_expression = program.name_expressions.empty() ? "" : program.name_expressions[0];
  script.size_names = size_names;
  for (const auto& text : vm["space"].as<std::vector<std::string>>()) {
    const auto equals = text.find('=');
    if (equals == std::string::npos || equals == 0 || equals + 1 == text.size()) {
      throw UsageError{"--space " + text + ": expected NAME=V1,V2,…", ""};
    }
    std::vector<std::string> values = split(text.substr(equals + 1), ',');
    if (std::find(values.begin(), values.end(), "") != values.end()) {
      // As an empty size name in --sizes: bad usage, not the library's check (exit 1).
      throw UsageError{"--space " + text + ": a value is empty (expected NAME=V1,V2,…)", ""};
    }
    script.space.push_back({text.substr(0, equals), std::move(values)});
  }
  BatchOptions batch;
  batch.jobs = jobs_option(vm);
  return script.build(default_cache(), batch);
}

} // namespace kjit::cli
