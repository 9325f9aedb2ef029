// The options that describe a script (FILE, program options, --name, --space, --sizes, --jobs),
// shared by `kjit script build`, `set-table` and `tune`: the latter two build it again (every
// schedule a cache hit once built) to get the BuiltScript whose table they set or tune.
#pragma once

#include "options.hpp"

#include <kjit/script.hpp>

#include <string>
#include <vector>

namespace kjit::cli {

// Adds the program options, --name, --space, --name-expr's pattern, --sizes and --jobs.
void add_script_options(po::options_description& visible, po::options_description& hidden,
                        po::positional_options_description& positional);

// Builds the script the parsed options describe (Script::build in worker processes; applies
// --cache-dir). Throws UsageError for a bad --name, --space or --sizes; what Script::build throws.
BuiltScript build_from_arguments(const po::variables_map& vm);

// `text` cut at each `separator` ("" gives one empty part).
std::vector<std::string> split(const std::string& text, char separator);

} // namespace kjit::cli
