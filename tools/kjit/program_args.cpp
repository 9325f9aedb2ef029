// Program options shared by the compile and explain subcommands.
#include "program_args.hpp"

#include <cerrno>
#include <cstring>
#include <sys/stat.h>
#include <utility>

namespace kjit::cli {

void add_program_options(po::options_description& visible, po::options_description& hidden,
                         po::positional_options_description& positional)
{
  visible.add_options()
    ("arch,a", po::value<std::string>()->default_value("auto"), "target: sm_XY, sm_XYa, sm_XYf, compute_XY or auto")
    ("define,D", po::value<std::vector<std::string>>()->composing(), "define a macro (-DNAME or -DNAME=VALUE)")
    ("include,I", po::value<std::vector<std::string>>()->composing(), "add an include folder")
    ("name-expr,n", po::value<std::vector<std::string>>()->composing(), "name expression, e.g. 'scale<float>'")
    ("option,X", po::value<std::vector<std::string>>()->composing(), "pass an option to NVRTC, e.g. -X--std=c++17")
    ("header", po::value<std::vector<std::string>>()->composing(),
     "an in-memory header NAME=FILE: #include \"NAME\" gets FILE's text, wherever the includer is")
    ("cache-dir", po::value<std::string>(), "cache folder (default: KJIT_CACHE_DIR or ~/.cache/kjit)");
  hidden.add_options()("file", po::value<std::string>()->required(), "CUDA C++ file");
  positional.add("file", 1);
}

void refuse_empty_program_values(const po::variables_map& vm)
{
  for (const auto& [key, name] : {std::pair{"define", "-D"}, {"include", "-I"}, {"option", "-X"}, {"name-expr", "--name-expr"},
                                  {"header", "--header"}}) {
    if (vm.count(key) == 0) {
      continue;
    }
    for (const std::string& value : vm[key].as<std::vector<std::string>>()) {
      if (value.empty()) {
        throw UsageError{std::string(name) + " needs a value, not \"\"", ""};
      }
    }
  }
}

std::map<std::string, std::string> headers_from_arguments(const po::variables_map& vm)
{
  std::map<std::string, std::string> files;  // NAME → FILE, every value checked before any is read
  if (vm.count("header") != 0) {
    for (const std::string& value : vm["header"].as<std::vector<std::string>>()) {
      const auto equals = value.find('=');
      if (equals == std::string::npos || equals == 0 || equals + 1 == value.size()) {
        throw UsageError{"--header needs NAME=FILE, not \"" + value + "\"", ""};
      }
      if (!files.emplace(value.substr(0, equals), value.substr(equals + 1)).second) {
        throw UsageError{"--header " + value.substr(0, equals) + " is given twice", ""};
      }
    }
  }
  std::map<std::string, std::string> headers;
  for (const auto& [name, file] : files) {
    // Read as a program is (program_from_file refuses FIFOs, devices and folders): kjit::Error.
    headers.emplace(name, program_from_file(file).source);
  }
  return headers;
}

Program program_from_arguments(const po::variables_map& vm, Arch& arch)
{
  refuse_empty_program_values(vm);
  try {
    arch = Arch::parse(vm["arch"].as<std::string>());
  } catch (const ArchError& e) {
    throw UsageError{std::string("--arch: ") + e.what(), ""};  // no arch name: bad usage (exit 2)
  }
  std::map<std::string, std::string> headers = headers_from_arguments(vm);  // a malformed one first: bad usage
  const std::string file = vm["file"].as<std::string>();
  Program program = program_from_file(file);  // refuses FIFOs, devices and folders
  auto list = [&vm](const char* key) {
    return vm.count(key) != 0 ? vm[key].as<std::vector<std::string>>() : std::vector<std::string>{};
  };
  for (const auto& define : list("define")) {
    program.options.push_back("-D" + define);
  }
  // A folder as written: "-I" + "=inc" would be the folder inc, as NVRTC reads -I=inc.
  CompileOptions folders;
  folders.include_dirs = list("include");
  for (auto& option : folders.render()) {
    program.options.push_back(std::move(option));
  }
  for (const auto& option : list("option")) {
    program.options.push_back(option);
  }
  program.name_expressions = list("name-expr");
  program.headers = std::move(headers);
  if (vm.count("cache-dir") != 0) {
    option::cache_dir(vm["cache-dir"].as<std::string>());
  }
  return program;
}

} // namespace kjit::cli
