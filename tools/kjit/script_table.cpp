// kjit script table / set-table: show a stored dispatch table as rows, and give a script its table.
#include "script_commands.hpp"

#include "cache_args.hpp"
#include "script_args.hpp"

#include <cstdio>
#include <fstream>
#include <sstream>

namespace kjit::cli {

namespace {

constexpr const char* k_table_synopsis = "kjit script table NAME|HASH-PREFIX [--cache-dir DIR]";
constexpr const char* k_set_synopsis =
  "kjit script set-table FILE --name NAME --space NAME=V1,V2 [--space …] [--name-expr PATTERN] [--sizes N,M]\n"
  "                      --arch ARCH [-D…] [-I…] [-X…] (--row KEYS=SCHEDULE [--row …] | --rows TABLE) [--cache-dir DIR]";

// "1024,256=3" (trailing "# comment" and blanks already gone) → the row. Throws UsageError.
DispatchEntry parse_row(const std::string& text, std::size_t size_count, const std::string& where)
{
  const auto equals = text.find('=');
  DispatchEntry entry;
  const auto number = [&](const std::string& digits) {
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos || digits.size() > 19) {
      throw UsageError{where + "'" + text + "': expected KEYS=SCHEDULE (e.g. 1024=2, or 1024,256=3 for two sizes)", ""};
    }
    return std::stoull(digits);
  };
  if (equals == std::string::npos) {
    number("");  // throws
  }
  for (const std::string& key : split(text.substr(0, equals), ',')) {
    entry.key.push_back(number(key));
  }
  if (entry.key.size() != size_count) {
    throw UsageError{where + "'" + text + "': " + std::to_string(entry.key.size()) + " keys for " +
                     std::to_string(size_count) + " sizes (--sizes)", ""};
  }
  entry.choice = static_cast<std::size_t>(number(text.substr(equals + 1)));
  return entry;
}

std::string trimmed(std::string line)
{
  line = line.substr(0, line.find('#'));
  const auto first = line.find_first_not_of(" \t\r");
  const auto last = line.find_last_not_of(" \t\r");
  return first == std::string::npos ? std::string() : line.substr(first, last - first + 1);
}

} // namespace

std::string row_text(const DispatchEntry& entry)
{
  std::string text;
  for (const std::uint64_t k : entry.key) {
    text += (text.empty() ? "" : ",") + std::to_string(k);
  }
  text += "=" + std::to_string(entry.choice) + "  # " + entry.how;
  for (std::size_t i = 0; i < entry.measured.size(); ++i) {  // (schedule, ms or cost), best first
    std::ostringstream value;
    value << entry.measured[i].second;
    text += (i == 0 ? ": " : ", ") + std::to_string(entry.measured[i].first) + " " + value.str();
  }
  return text;
}

int script_table(const std::vector<std::string>& args)
{
  po::options_description visible("options");
  add_cache_dir_option(visible);
  po::options_description hidden;
  hidden.add_options()("which", po::value<std::string>()->required(), "name or hash prefix");
  po::positional_options_description positional;
  positional.add("which", 1);
  po::variables_map vm;
  if (!parse_arguments(args, k_table_synopsis, visible, hidden, positional, vm)) {
    return 0;
  }
  const std::string which = vm["which"].as<std::string>();
  if (which.empty()) {
    throw UsageError{"script table needs a script name or hash prefix, not \"\"", ""};  // "" prefixes every hash
  }
  const auto cache = open_cache(vm, Access::read);
  std::size_t shown = 0;
  for (const ScriptSummary& s : cache ? stored_scripts(*cache) : std::vector<ScriptSummary>{}) {
    if (s.name != which && s.hash.rfind(which, 0) != 0) {
      continue;
    }
    std::string sizes;
    for (const auto& name : s.size_names) {
      sizes += (sizes.empty() ? "" : ",") + name;
    }
    std::printf("%s# script %s %s\n# rows: %s=SCHEDULE\n", shown++ == 0 ? "" : "\n", one_line(s.name).c_str(),
                s.hash.c_str(), sizes.c_str());
    if (s.table.empty()) {
      std::printf("# no dispatch table yet\n");
      continue;
    }
    std::printf("# fingerprint: %s\n", s.fingerprint.text().c_str());
    for (const DispatchEntry& e : s.table) {
      std::printf("%s\n", row_text(e).c_str());
    }
  }
  if (shown == 0) {
    throw ScriptError("no stored script is named '" + which + "' or has a hash starting with it");
  }
  return 0;
}

int script_set_table(const std::vector<std::string>& args)
{
  po::options_description visible("options");
  po::options_description hidden;
  po::positional_options_description positional;
  add_script_options(visible, hidden, positional);
  visible.add_options()
    ("row", po::value<std::vector<std::string>>()->composing(), "a table row: KEYS=SCHEDULE (tuning keys, one per size)")
    ("rows", po::value<std::string>(), "a file of rows, one per line, as `kjit script table` prints them");
  po::variables_map vm;
  if (!parse_arguments(args, k_set_synopsis, visible, hidden, positional, vm)) {
    return 0;
  }
  if (vm.count("row") + vm.count("rows") != 1) {
    throw UsageError{"give the table: --row KEYS=SCHEDULE (repeated) or --rows FILE", ""};
  }
  const std::size_t sizes = split(vm["sizes"].as<std::string>(), ',').size();
  std::vector<DispatchEntry> rows;
  if (vm.count("row") != 0) {
    for (const std::string& text : vm["row"].as<std::vector<std::string>>()) {
      rows.push_back(parse_row(trimmed(text), sizes, "--row "));
    }
  } else {
    const std::string path = vm["rows"].as<std::string>();
    std::ifstream file(path);
    if (!file) {
      throw Error("cannot read the table " + path);
    }
    std::string line;
    for (std::size_t number = 1; std::getline(file, line); ++number) {
      if (const std::string text = trimmed(line); !text.empty()) {
        rows.push_back(parse_row(text, sizes, path + ":" + std::to_string(number) + ": "));
      }
    }
  }
  BuiltScript built = build_from_arguments(vm);
  // Given by a person, the table holds wherever the script is built: every field "*".
  built.set_table(rows, Fingerprint{"*", "*", "*", "*", "*"});
  std::printf("script %s (%s): dispatch table of %zu rows set\n", one_line(built.name()).c_str(), built.hash().c_str(),
              rows.size());
  return 0;
}

} // namespace kjit::cli
