// Parsing a subcommand's arguments with Boost.Program_options, turning its errors into UsageError.
#pragma once

#include "commands.hpp"

#include <boost/program_options.hpp>

#include <iostream>
#include <sstream>

namespace kjit::cli {

namespace po = boost::program_options;

// Parses `args` against `visible` options plus `positional` ones; --help prints usage and
// returns false. Bad arguments throw UsageError carrying the usage text.
inline bool parse_arguments(const std::vector<std::string>& args, const std::string& synopsis,
                            const po::options_description& visible, const po::options_description& hidden,
                            const po::positional_options_description& positional, po::variables_map& vm)
{
  std::ostringstream usage;
  usage << "usage: " << synopsis << "\n\n" << visible;
  po::options_description all;
  all.add(visible).add(hidden).add_options()("help,h", "show this help");
  try {
    po::store(po::command_line_parser(args).options(all).positional(positional).run(), vm);
    if (vm.count("help") != 0) {
      std::cout << usage.str();
      return false;
    }
    po::notify(vm);
    if (vm.count("cache-dir") != 0 && vm["cache-dir"].as<std::string>().empty()) {
      throw UsageError{"--cache-dir needs a folder, not \"\"", usage.str()};
    }
  } catch (const po::required_option& e) {
    // A positional argument is a hidden option: name it by its description, not by an --option
    // the user can't see.
    const std::string name = e.get_option_name().substr(e.get_option_name().find_first_not_of('-'));
    const po::option_description* argument = hidden.find_nothrow(name, false);
    throw UsageError{argument != nullptr ? "missing argument: " + argument->description() : e.what(), usage.str()};
  } catch (const po::error& e) {
    throw UsageError{e.what(), usage.str()};
  }
  return true;
}

} // namespace kjit::cli
