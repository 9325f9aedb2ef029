// kjit script build|list|show: build a script's schedules, list stored scripts, show one.
#include "cache_args.hpp"
#include "program_args.hpp"

#include <kjit/script.hpp>

#include <algorithm>
#include <cstdio>
#include <iostream>

namespace kjit::cli {

namespace {

constexpr const char* k_synopsis =
  "kjit script build FILE --name NAME --space NAME=V1,V2 [--space …] [--name-expr PATTERN] [--sizes N,M]\n"
  "                  --arch ARCH [-D…] [-I…] [-X…] [--jobs N] [--cache-dir DIR]\n"
  "       kjit script list [--cache-dir DIR]\n"
  "       kjit script show NAME|HASH-PREFIX [--cache-dir DIR]";

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

std::string values_text(const ScheduleInfo& s)
{
  std::string text;
  for (const auto& [name, value] : s.values) {
    text += (text.empty() ? "" : " ") + name + "=" + value;
  }
  return text;
}

std::size_t built_count(const std::vector<ScheduleInfo>& schedules)
{
  std::size_t n = 0;
  for (const auto& s : schedules) {
    n += s.built ? 1 : 0;
  }
  return n;
}

void print_schedules(const std::vector<ScheduleInfo>& schedules)
{
  for (const auto& s : schedules) {
    std::printf("  %zu  %-32s %s\n", s.index, values_text(s).c_str(),
                s.built ? s.program_key.substr(0, 12).c_str()
                        : ("FAILED (failed/building/" + std::to_string(s.index) + ".txt)").c_str());
  }
}

int build(const std::vector<std::string>& args)
{
  po::options_description visible("options");
  po::options_description hidden;
  po::positional_options_description positional;
  add_program_options(visible, hidden, positional);
  visible.add_options()
    ("name", po::value<std::string>()->required(), "the script's name (its folder under scripts/)")
    ("space", po::value<std::vector<std::string>>()->composing()->required(), "a tuning parameter: NAME=V1,V2,…")
    ("sizes", po::value<std::string>()->default_value("n"), "names of the dynamic sizes, comma-separated")
    ("jobs,j", po::value<unsigned>()->default_value(0), "worker processes (0: one per core)");
  po::variables_map vm;
  if (!parse_arguments(args, k_synopsis, visible, hidden, positional, vm)) {
    return 0;
  }
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
  const BuiltScript built = script.build(default_cache(), batch);
  std::printf("script %s (%s): %zu of %zu schedules built for %s\n", one_line(built.name()).c_str(), built.hash().c_str(),
              built_count(built.schedules()), built.schedules().size(), built.arch().str().c_str());
  print_schedules(built.schedules());
  // As Script::build writes it: not without a disk tier (KJIT_DISABLE_CACHE) or to a read-only cache.
  const Cache& cache = default_cache();
  if (cache.config().mirror && cache.has_disk_tier() && cache.writable()) {
    std::printf("mirror: %s/scripts/%s/%s/\n", default_cache().config().cache_dir.c_str(), built.folder().c_str(),
                built.hash().c_str());
  }
  return 0;
}

void print_table(const ScriptSummary& s)
{
  if (s.table.empty()) {
    std::printf("dispatch table: none yet\n");
    return;
  }
  std::printf("dispatch table (%s):\n  ", s.fingerprint.text().c_str());
  for (const auto& name : s.size_names) {
    std::printf("%-12s ", name.c_str());
  }
  std::printf("choice  how\n");
  for (const auto& e : s.table) {
    std::printf("  ");
    for (const std::uint64_t k : e.key) {
      std::printf("%-12llu ", static_cast<unsigned long long>(k));
    }
    std::printf("%-7zu %s\n", e.choice, e.how.c_str());
  }
}

int list_or_show(const std::vector<std::string>& args, bool show)
{
  po::options_description visible("options");
  add_cache_dir_option(visible);
  po::options_description hidden;
  po::positional_options_description positional;
  if (show) {
    hidden.add_options()("which", po::value<std::string>()->required(), "name or hash prefix");
    positional.add("which", 1);
  }
  po::variables_map vm;
  if (!parse_arguments(args, k_synopsis, visible, hidden, positional, vm)) {
    return 0;
  }
  const std::string which = show ? vm["which"].as<std::string>() : std::string();
  if (show && which.empty()) {
    throw UsageError{"script show needs a script name or hash prefix, not \"\"", ""};  // "" prefixes every hash
  }
  const auto cache = open_cache(vm, Access::read);
  const std::vector<ScriptSummary> scripts = cache ? stored_scripts(*cache) : std::vector<ScriptSummary>{};
  if (!show) {
    for (const auto& s : scripts) {
      std::printf("%.12s  %-24s %-8s %zu/%zu built  %zu table rows  %s\n", s.hash.c_str(), one_line(s.name).c_str(),
                  s.arch.c_str(), built_count(s.schedules), s.schedules.size(), s.table.size(),
                  format_time(s.created_unix).c_str());
    }
    return 0;
  }
  std::size_t shown = 0;
  for (const auto& s : scripts) {
    if (s.name != which && s.hash.rfind(which, 0) != 0) {
      continue;
    }
    std::printf("%sscript %s\nhash: %s\nfolder: scripts/%s/%s\narch: %s\n", shown++ == 0 ? "" : "\n", one_line(s.name).c_str(),
                s.hash.c_str(), s.folder.c_str(), s.hash.c_str(), s.arch.c_str());
    std::printf("name expression: %s\nschedules (%zu built of %zu):\n",
                s.name_expression.empty() ? "(none: values as macros)" : one_line(s.name_expression).c_str(),
                built_count(s.schedules), s.schedules.size());
    print_schedules(s.schedules);
    print_table(s);
  }
  if (shown == 0) {
    throw ScriptError("no stored script is named '" + which + "' or has a hash starting with it");
  }
  return 0;
}

} // namespace

int command_script(const std::vector<std::string>& args)
{
  const std::string action = args.empty() ? "" : args[0];
  const std::vector<std::string> rest(args.empty() ? args.end() : args.begin() + 1, args.end());
  if (action == "build") {
    return build(rest);
  }
  if (action == "list" || action == "show") {
    return list_or_show(rest, action == "show");
  }
  if (action == "--help" || action == "-h") {
    std::cout << "usage: " << k_synopsis << "\n";
    return 0;
  }
  throw UsageError{action.empty() ? "missing action: build, list or show" : "unknown action '" + action + "'",
                   std::string("usage: ") + k_synopsis + "\n"};
}

} // namespace kjit::cli
