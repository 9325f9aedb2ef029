// kjit config / doctor: the settings in force and where they came from; a health check.
#include "cache_args.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>

namespace kjit::cli {

namespace {

// A KJIT_* variable whose value fails to parse: left out, so the others still count.
struct BadVariable {
  std::string variable;
  std::string value;
  std::string why;  // ConfigError's message
};

// The configuration with each bad variable unset in this process (so it falls back to its
// default) and listed in `bad`: one bad variable never hides the rest. Other errors are thrown.
Config config_despite_bad_variables(std::vector<BadVariable>& bad)
{
  for (;;) {
    try {
      return current_config();
    } catch (const ConfigError& e) {
      const char* value = std::getenv(e.variable().c_str());
      if (value == nullptr) {
        throw;  // not from the environment (an API override): nothing to leave out
      }
      bad.push_back({e.variable(), value, e.what()});
      ::unsetenv(e.variable().c_str());
    }
  }
}

} // namespace

int command_config(const std::vector<std::string>& args)
{
  po::options_description visible("options");
  visible.add_options()("json", "as JSON");
  add_cache_dir_option(visible);
  po::variables_map vm;
  if (!parse_arguments(args, "kjit config [--json] [--cache-dir DIR]", visible, {}, {}, vm)) {
    return 0;
  }
  if (vm.count("cache-dir") != 0) {
    option::cache_dir(vm["cache-dir"].as<std::string>());
  }
  std::vector<BadVariable> bad;
  std::ignore = config_despite_bad_variables(bad);
  std::vector<SettingValue> values = setting_values();
  for (SettingValue& v : values) {
    for (const BadVariable& b : bad) {
      if (v.variable == b.variable) {
        // A URL that failed to parse can't be masked reliably: one with credentials isn't shown.
        v.value = b.value.find('@') == std::string::npos ? b.value : "(hidden: it names credentials)";
        v.source = "invalid";
      }
    }
  }
  for (const BadVariable& b : bad) {
    std::cerr << "kjit config: " << b.why << " (ignored: its default is used)\n";
  }
  if (vm.count("json") != 0) {
    std::cout << "[";
    for (std::size_t i = 0; i < values.size(); ++i) {
      const SettingValue& v = values[i];
      std::cout << (i == 0 ? "\n  " : ",\n  ") << "{\"name\": " << json_string(v.name)
                << ", \"variable\": " << json_string(v.variable) << ", \"value\": " << json_string(v.value)
                << ", \"source\": " << json_string(v.source == "api" ? "command line" : v.source) << "}";
    }
    std::cout << "\n]\n";
    return bad.empty() ? 0 : k_exit_failure;
  }
  // Columns as wide as their longest entry (a long path or URL must not shift the next column).
  int variable_width = 0;
  int value_width = 0;
  for (const SettingValue& v : values) {
    variable_width = std::max(variable_width, static_cast<int>(v.variable.size()));
    value_width = std::max(value_width, static_cast<int>(v.value.empty() ? 7 : v.value.size()));
  }
  for (const SettingValue& v : values) {
    // Set through kjit::option here means --cache-dir on the command line.
    const std::string source = v.source == "api"           ? "command line"
                               : v.source == "environment" ? v.variable
                               : v.source == "invalid"     ? v.variable + " (invalid, ignored)"
                                                           : "default";
    std::printf("%-*s  %-*s  %s\n", variable_width, v.variable.c_str(), value_width,
                (v.value.empty() ? "(empty)" : v.value).c_str(), source.c_str());
  }
  return bad.empty() ? 0 : k_exit_failure;
}

int command_doctor(const std::vector<std::string>& args)
{
  po::options_description visible("options");
  visible.add_options()("json", "the checks as a JSON array");
  add_cache_dir_option(visible);
  po::variables_map vm;
  if (!parse_arguments(args, "kjit doctor [--json] [--cache-dir DIR]", visible, {}, {}, vm)) {
    return 0;
  }
  if (vm.count("cache-dir") != 0) {
    option::cache_dir(vm["cache-dir"].as<std::string>());
  }
  const Colours& c = colours();
  const bool json = vm.count("json") != 0;
  bool healthy = true;
  bool first = true;
  std::vector<BadVariable> bad;
  const Config config = config_despite_bad_variables(bad);
  std::vector<HealthCheck> checks;
  for (const BadVariable& b : bad) {
    checks.push_back({HealthCheck::Status::error, "setting", b.why + " (ignored: its default is used)"});
  }
  for (HealthCheck& check : diagnose(config)) {
    checks.push_back(std::move(check));
  }
  for (const HealthCheck& check : checks) {
    using Status = HealthCheck::Status;
    const char* colour = check.status == Status::ok ? c.ok : check.status == Status::warning ? c.warn : c.bad;
    const char* word = check.status == Status::ok ? "ok" : check.status == Status::warning ? "warning" : "error";
    healthy = healthy && check.status != Status::error;
    if (json) {
      std::cout << (first ? "[\n  " : ",\n  ") << "{\"status\": \"" << word << "\", \"what\": " << json_string(check.what)
                << ", \"detail\": " << json_string(check.detail) << "}";
    } else {
      std::cout << colour << word << c.reset << std::string(8 - std::string(word).size(), ' ') << check.what
                << std::string(check.what.size() < 14 ? 14 - check.what.size() : 1, ' ') << check.detail << "\n";
    }
    first = false;
  }
  if (json) {
    std::cout << (first ? "[]\n" : "\n]\n");
  }
  return healthy ? 0 : k_exit_failure;
}

} // namespace kjit::cli
