// kjit explain FILE [options]: why is this program not in the cache?
#include "commands.hpp"
#include "cache_args.hpp"
#include "program_args.hpp"

#include <iostream>

namespace kjit::cli {

int command_explain(const std::vector<std::string>& args)
{
  po::options_description visible("options");
  po::options_description hidden;
  po::positional_options_description positional;
  add_program_options(visible, hidden, positional);
  po::variables_map vm;
  if (!parse_arguments(args, "kjit explain FILE [options]", visible, hidden, positional, vm)) {
    return 0;
  }
  Arch arch;
  const Program program = program_from_arguments(vm, arch);
  // Explaining looks and changes nothing: a missing folder is not created and a damaged store is
  // left where it is (then explained as a memory-only cache would be).
  std::unique_ptr<Cache> cache = open_cache(vm, Access::read);
  if (!cache) {
    Config memory_only = current_config();
    memory_only.disable_cache = true;
    cache = std::make_unique<Cache>(memory_only);
  }
  const MissExplanation explanation = cache->explain(program, arch);
  std::cout << "key " << explanation.key << "\n";
  if (explanation.hit) {
    std::cout << "hit: " << program.name << " is cached as it is\n";
  } else if (explanation.closest_key.empty()) {
    std::cout << "miss: no earlier entry of " << program.name << " in the cache\n";
    for (const auto& difference : explanation.differences) {
      std::cout << "  " << difference << "\n";
    }
  } else {
    std::cout << "miss: closest earlier entry " << explanation.closest_key << " differs in:\n";
    for (const auto& difference : explanation.differences) {
      std::cout << "  " << difference << "\n";
    }
  }
  // 0: a lookup would hit; 3: it would miss (1 and 2 keep their meaning: failed, bad usage).
  return explanation.hit ? 0 : k_exit_miss;
}

} // namespace kjit::cli
