// kjit: command-line front end. Thin: it parses arguments and calls the library.
#include "commands.hpp"

#include <kjit/error.hpp>

#include <cstring>
#include <iostream>
#include <map>

namespace {

const char* const k_usage = R"(usage: kjit <command> [options]

commands:
  compile FILE --arch ARCH [-D…] [-I…] [--name-expr …] [-o DIR]   compile a CUDA C++ file (cached;
                                                                  --no-cache bypasses the cache)
  explain FILE [same options as compile]                          why a program misses: the closest
                                                                  entry and the key fields that differ
  warm FILE... --arch LIST [--jobs N] [--timeout S]                fill the cache: misses compiled in
                                                                  worker processes on every core
  cache stats|clear|rebuild-mirror|orphans|path [--cache-dir DIR] inspect or maintain the cache
  version                                                         versions and driver status

kjit --version is the same as kjit version; kjit <command> --help shows a command's options.
)";

} // namespace

int main(int argc, char** argv)
{
  using namespace kjit::cli;
  const std::map<std::string, int (*)(const std::vector<std::string>&)> commands{
    {"cache", command_cache},
    {"compile", command_compile},
    {"explain", command_explain},
    {"version", command_version},
    {"warm", command_warm},
    {"--version", command_version},
  };
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    (argc < 2 ? std::cerr : std::cout) << k_usage;
    return argc < 2 ? k_exit_usage : 0;
  }
  const auto command = commands.find(argv[1]);
  if (command == commands.end()) {
    std::cerr << "kjit: unknown command '" << argv[1] << "'\n\n" << k_usage;
    return k_exit_usage;
  }
  try {
    return command->second(std::vector<std::string>(argv + 2, argv + argc));
  } catch (const UsageError& e) {
    std::cerr << "kjit " << argv[1] << ": " << e.message << "\n\n" << e.usage;
    return k_exit_usage;
  } catch (const kjit::Error& e) {
    std::cerr << "kjit " << argv[1] << ": " << e.what() << "\n";
    return k_exit_failure;
  } catch (const std::exception& e) {
    std::cerr << "kjit " << argv[1] << ": unexpected error: " << e.what() << "\n";
    return k_exit_failure;
  }
}
