// kjit script build|list|show|table|set-table|tune: build a script's schedules, list stored scripts, show
// one; the table actions are in script_table.cpp and script_tune.cpp.
#include "cache_args.hpp"
#include "script_args.hpp"
#include "script_commands.hpp"

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
  "       kjit script show NAME|HASH-PREFIX [--cache-dir DIR]\n"
  "       kjit script table NAME|HASH-PREFIX [--cache-dir DIR]\n"
  "       kjit script set-table FILE <build options> (--row KEYS=SCHEDULE [--row …] | --rows TABLE)\n"
  "       kjit script tune FILE <build options> --at SIZES [--at …] --grid X[,Y,Z] --block X[,Y,Z] [--arg TYPE:VALUE …]";

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
  add_script_options(visible, hidden, positional);
  po::variables_map vm;
  if (!parse_arguments(args, k_synopsis, visible, hidden, positional, vm)) {
    return 0;
  }
  const BuiltScript built = build_from_arguments(vm);
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
  if (action == "table") {
    return script_table(rest);
  }
  if (action == "set-table") {
    return script_set_table(rest);
  }
  if (action == "tune") {
    return script_tune(rest);
  }
  if (action == "--help" || action == "-h") {
    std::cout << "usage: " << k_synopsis << "\n";
    return 0;
  }
  throw UsageError{action.empty() ? "missing action: build, list, show, table, set-table or tune" : "unknown action '" + action + "'",
                   std::string("usage: ") + k_synopsis + "\n"};
}

} // namespace kjit::cli
