// The kjit CLI's subcommands. Each parses its own arguments and returns the process exit code.
#pragma once

#include <string>
#include <vector>

namespace kjit::cli {

// Exit codes: 0 success, 1 the operation failed (message on stderr), 2 bad usage, 3 (explain) a miss.
constexpr int k_exit_failure = 1;
constexpr int k_exit_miss = 3;  // kjit explain: the lookup would miss
constexpr int k_exit_usage = 2;

// Thrown for bad command-line arguments; main() prints it with the usage text (the command's
// --help when `usage` is empty) and exits 2.
struct UsageError {
  std::string message;
  std::string usage;
};

int command_explain(const std::vector<std::string>& args);
int command_compile(const std::vector<std::string>& args);
int command_cache(const std::vector<std::string>& args);
int command_version(const std::vector<std::string>& args);
int command_list(const std::vector<std::string>& args);
int command_show(const std::vector<std::string>& args);
int command_cat(const std::vector<std::string>& args);
int command_stats(const std::vector<std::string>& args);
int command_verify(const std::vector<std::string>& args);
int command_prune(const std::vector<std::string>& args);
int command_clear(const std::vector<std::string>& args);
int command_mirror(const std::vector<std::string>& args);
int command_config(const std::vector<std::string>& args);
int command_doctor(const std::vector<std::string>& args);
int command_export(const std::vector<std::string>& args);
int command_import(const std::vector<std::string>& args);
int command_warm(const std::vector<std::string>& args);
int command_script(const std::vector<std::string>& args);

} // namespace kjit::cli
