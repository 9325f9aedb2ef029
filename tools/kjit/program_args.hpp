// The options that describe a program (file, arch, -D, -I, name expressions, NVRTC options,
// cache folder), shared by `kjit compile` and `kjit explain`.
#pragma once

#include "options.hpp"

#include <kjit/kjit.hpp>

#include <map>
#include <string>

namespace kjit::cli {

// Adds --arch, -D, -I, --name-expr, -X, --header and --cache-dir to `visible` and FILE to `hidden`/`positional`.
void add_program_options(po::options_description& visible, po::options_description& hidden,
                         po::positional_options_description& positional);

// Throws UsageError for an empty -D, -I, -X, --name-expr or --header: "-D" alone would take the next option
// as its macro ("-D" "-Iinc"), "-I" the next as its folder.
void refuse_empty_program_values(const po::variables_map& vm);

// The program and arch the parsed options describe; applies --cache-dir. Throws UsageError for an
// ARCH that is no arch name, kjit::Error for a FILE that can't be read.
Program program_from_arguments(const po::variables_map& vm, Arch& arch);

// The --header NAME=FILE values: NAME → FILE's text (Program::headers). Throws UsageError for a
// malformed or repeated NAME, kjit::Error for a FILE that can't be read.
std::map<std::string, std::string> headers_from_arguments(const po::variables_map& vm);

} // namespace kjit::cli
