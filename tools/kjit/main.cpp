// kjit: command-line front end. Thin: it parses arguments and calls the library.
#include "commands.hpp"
#include "malloc_arenas.hpp"
#include "standard_fds.hpp"

#include <kjit/config.hpp>
#include <kjit/error.hpp>

#include <cstdio>
#include <csignal>
#include <cstring>
#include <iostream>
#include <map>
#include <sstream>

namespace {

const char* const k_usage = R"(usage: kjit <command> [options]

compiling:
  compile FILE --arch ARCH [-D…] [-I…] [--name-expr …] [-o DIR]  compile a CUDA C++ file through the cache
                                                (--no-cache bypasses it); -o DIR is created if missing
  explain FILE [same options as compile]        why a program misses: the closest entry and what differs
  warm FILE... --arch LIST [--jobs N] [--timeout S]   fill the cache: misses compiled in worker
                                                processes on every core

scripts (a kernel family built for every schedule of a tuning space; docs/scripts.md):
  script build FILE --name NAME --space P=V1,V2 [--space …] [--name-expr PATTERN] --arch ARCH
                                                build every schedule as a batch, record and mirror them
  script list                                   the stored scripts
  script show NAME|HASH-PREFIX                  schedules, dispatch table and its fingerprint
  script table NAME|HASH-PREFIX                 the dispatch table as rows KEYS=SCHEDULE
  script set-table FILE [build options] --row KEYS=SCHEDULE…|--rows TABLE   give a script its table
  script tune FILE [build options] --at SIZES… --grid G --block B [--arg T:V…]   time the schedules (a GPU)

operating a cache (all take --cache-dir DIR):
  list [--name N] [--arch A] [--json]           the entries
  show KEY-PREFIX [--json]                      one entry: program, arch, sizes, options, names, dates
  cat KEY-PREFIX --source|--ptx|--cubin|--log|--program|--options   print one part of an entry
  stats [--json]                                entries, bytes by kind, compile time stored
  verify [--repair]                             decode every record; --repair moves damaged ones aside
  prune --older-than AGE|--max-size SIZE|--orphans   remove old, excess or unusable entries
  clear                                         empty the store and the mirror
  mirror --rebuild|--remove                     rewrite or delete the readable programs/ tree
  export FILE [--name N] [--arch A]             write entries to a bundle file
  import FILE                                   verify a bundle and add its entries
  config [--json]                               each setting, its value and where it came from
  doctor                                        toolkit, compilers, driver, cache folder and store health
  cache stats|clear|rebuild-mirror|orphans|path older spellings of the above (kept)

  version                                       versions and driver status
  help [COMMAND]                                this text, or a command's options

Exit codes: 0 success, 1 the operation failed, 2 bad usage, 3 explain: the lookup would miss.
Errors go to stderr.
)";

// A command's output that could not be written (a full disk, /dev/full, a closed descriptor) is a
// failed operation, exit 1 as the usage says, not a success with the output lost.
int written(const char* name, int status)
{
  std::cout.flush();
  const bool ok = std::cout.good() && std::fflush(stdout) == 0 && std::ferror(stdout) == 0;
  if (!ok) {
    std::cerr << "kjit " << name << ": cannot write the output to standard output\n";
  }
  return ok || status != 0 ? status : kjit::cli::k_exit_failure;
}

using Command = int (*)(const std::vector<std::string>&);

// The command's usage, as `kjit COMMAND --help` prints it: for a usage error found after its
// arguments were parsed (an arch that is no arch name), which carries no usage text of its own.
std::string usage_of(Command command)
{
  std::ostringstream text;
  std::streambuf* const stdout_buffer = std::cout.rdbuf(text.rdbuf());
  try {
    command({"--help"});
  } catch (...) {
  }
  std::cout.rdbuf(stdout_buffer);
  return text.str();
}

} // namespace

int main(int argc, char** argv)
{
  using namespace kjit::cli;
  open_standard_fds();  // before anything opens a file
  share_one_malloc_arena();  // before any thread
  // A file size limit (ulimit -f) makes a write of the CLI's own (-o files, export's bundle) fail
  // with EFBIG, said and exit 1, instead of killing kjit half way with SIGXFSZ (exit 153, a
  // temporary file left in the output folder). The library's writes block it themselves.
  std::signal(SIGXFSZ, SIG_IGN);
  // An operator's malformed KJIT_* value is an error here, named, exit 1: the library's default
  // (left out with a warning) suits applications, not a command someone just typed.
  kjit::option::strict_environment(true);
  const std::map<std::string, Command> commands{
    {"cache", command_cache},     {"compile", command_compile}, {"explain", command_explain},
    {"version", command_version}, {"--version", command_version}, {"list", command_list},
    {"show", command_show},       {"cat", command_cat},         {"stats", command_stats},
    {"verify", command_verify},   {"prune", command_prune},     {"clear", command_clear},
    {"mirror", command_mirror},   {"config", command_config},   {"doctor", command_doctor},
    {"export", command_export},   {"import", command_import},   {"warm", command_warm},
    {"script", command_script},
  };
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0 ||
      (std::strcmp(argv[1], "help") == 0 && (argc == 2 || (argc == 3 && std::strcmp(argv[2], "help") == 0)))) {
    (argc < 2 ? std::cerr : std::cout) << k_usage;
    return argc < 2 ? k_exit_usage : written("help", 0);
  }
  // kjit help COMMAND is kjit COMMAND --help.
  const bool help = std::strcmp(argv[1], "help") == 0;
  const char* name = help ? argv[2] : argv[1];
  const auto command = commands.find(name);
  if (command == commands.end() || (help && argc > 3)) {
    std::cerr << "kjit: " << (command == commands.end() ? "unknown command '" + std::string(name) + "'"
                                                        : std::string("help takes one command"))
              << "\n\n" << k_usage;
    return k_exit_usage;
  }
  try {
    return written(name,
                   command->second(help ? std::vector<std::string>{"--help"} : std::vector<std::string>(argv + 2, argv + argc)));
  } catch (const UsageError& e) {
    std::cerr << "kjit " << name << ": " << e.message << "\n\n" << (e.usage.empty() ? usage_of(command->second) : e.usage);
    return k_exit_usage;
  } catch (const kjit::Error& e) {
    std::cerr << "kjit " << name << ": " << e.what() << "\n";
    return k_exit_failure;
  } catch (const std::exception& e) {
    std::cerr << "kjit " << name << ": unexpected error: " << e.what() << "\n";
    return k_exit_failure;
  }
}
