// kjit verify / prune / clear / mirror: keep a cache folder healthy and small.
#include "cache_args.hpp"

#include <cerrno>
#include <cstdio>
#include <iostream>
#include <optional>
#include <unistd.h>

namespace kjit::cli {

int command_verify(const std::vector<std::string>& args)
{
  po::options_description visible("options");
  visible.add_options()
    ("repair", "move the damaged entries aside (quarantine); they are recompiled when next asked for")
    ("json", "the result as JSON");
  add_cache_dir_option(visible);
  po::variables_map vm;
  if (!parse_arguments(args, "kjit verify [--repair] [--json] [--cache-dir DIR]", visible, {}, {}, vm)) {
    return 0;
  }
  const bool repair = vm.count("repair") != 0;
  const auto cache = open_cache(vm, repair ? Access::write : Access::read);
  if (!cache) {
    std::cout << "no cache at " << current_config().cache_dir << "\n";
    return 0;
  }
  if (repair) {
    require_writable(*cache);
  }
  if (!cache->has_disk_tier()) {
    throw StoreError("the store of " + cache->config().cache_dir + " could not be opened or was damaged, so it was not checked" +
                       (repair ? "" : " (left as it is: kjit verify --repair replaces a damaged store)"),
                     EIO);
  }
  // The structure first (a walk in a child process): record checks below read what survives.
  std::string walk;
  const bool walked_sound = cache->check_store(walk);
  const bool sound = walked_sound && cache->stats().stores_replaced == 0;
  if (!sound) {
    std::cerr << "kjit verify: the store was damaged (" << (walked_sound ? "found when it was opened" : walk) << "); "
              << (repair ? "it was moved aside and replaced by an empty one" : "left as it is (--repair replaces it)")
              << "\n";
  }
  const bool bar = ::isatty(STDERR_FILENO) != 0;
  const VerifyReport report = cache->verify(repair ? Repair::quarantine : Repair::no, [bar](std::size_t done, std::size_t total) {
    if (bar && (done == total || done % 64 == 0)) {
      const int width = 30;
      const int filled = total == 0 ? width : static_cast<int>(width * done / total);
      std::fprintf(stderr, "\r[%.*s%*s] %zu/%zu", filled, "##############################", width - filled, "", done,
                   total);
      if (done == total) {
        std::fputc('\n', stderr);
      }
    }
  });
  if (vm.count("json") != 0) {
    std::cout << "{\"checked\": " << report.checked << ", \"quarantined\": " << report.quarantined << ", \"damaged\": [";
    for (std::size_t i = 0; i < report.bad.size(); ++i) {
      std::cout << (i == 0 ? "" : ", ") << "{\"key\": " << json_string(report.bad[i].first)
                << ", \"why\": " << json_string(report.bad[i].second) << "}";
    }
    std::cout << "], \"store_damaged\": " << (sound ? "false" : "true") << "}\n";
    return sound && (report.bad.empty() || repair) ? 0 : k_exit_failure;
  }
  const Colours& c = colours();
  for (const auto& [key, why] : report.bad) {
    std::cout << c.bad << "damaged" << c.reset << " " << key << ": " << why << "\n";
  }
  std::cout << "checked " << report.checked << " entries: " << report.bad.size() << " damaged";
  if (repair) {
    std::cout << ", " << report.quarantined << " moved aside";
  }
  std::cout << "\n";
  return sound && (report.bad.empty() || repair) ? 0 : k_exit_failure;
}

int command_prune(const std::vector<std::string>& args)
{
  po::options_description visible("what to remove (at least one)");
  visible.add_options()
    ("older-than", po::value<std::string>(), "entries created longer ago than AGE (90s, 15m, 12h, 30d, 2w)")
    ("max-size", po::value<std::string>(), "least recently used entries until the entries (records + mirror) take at most SIZE (e.g. 500MiB)")
    ("orphans", "entries made by another NVRTC/nvJitLink or record format (never returned)");
  add_cache_dir_option(visible);
  po::variables_map vm;
  const std::string synopsis = "kjit prune --older-than AGE | --max-size SIZE | --orphans [--cache-dir DIR]";
  if (!parse_arguments(args, synopsis, visible, {}, {}, vm)) {
    return 0;
  }
  if (vm.count("older-than") + vm.count("max-size") + vm.count("orphans") == 0) {
    throw UsageError{"say what to prune: --older-than AGE, --max-size SIZE or --orphans", "usage: " + synopsis + "\n"};
  }
  const std::int64_t age = vm.count("older-than") != 0 ? parse_age(vm["older-than"].as<std::string>(), "usage: " + synopsis + "\n") : -1;
  std::optional<std::size_t> size;  // every size is a limit, the largest too
  if (vm.count("max-size") != 0) {
    try {
      size = parse_size(vm["max-size"].as<std::string>(), "--max-size");
    } catch (const ConfigError& e) {
      throw UsageError{e.what(), "usage: " + synopsis + "\n"};  // a bad argument: exit 2
    }
  }
  const auto cache = open_cache(vm, Access::change);  // nothing to prune in a missing folder
  if (!cache) {
    std::cout << "no cache at " << current_config().cache_dir << "\n";
    return 0;
  }
  require_writable(*cache);
  // Each count is had before its line is printed: a prune that throws (a full disk) printed a bare
  // "removed " on stdout before its error.
  if (vm.count("orphans") != 0) {
    const std::size_t removed = cache->remove_orphans();
    std::cout << "removed " << removed << " orphans\n";
  }
  if (age >= 0) {
    const std::size_t removed = cache->prune_older_than(age);
    std::cout << "removed " << removed << " entries older than " << vm["older-than"].as<std::string>() << "\n";
  }
  if (size) {
    const std::size_t removed = cache->prune_to_size(*size);
    std::cout << "removed " << removed << " entries to fit in " << format_bytes(*size) << "\n";
  }
  return 0;
}

int command_clear(const std::vector<std::string>& args)
{
  po::options_description visible("options");
  add_cache_dir_option(visible);
  po::variables_map vm;
  if (!parse_arguments(args, "kjit clear [--cache-dir DIR]", visible, {}, {}, vm)) {
    return 0;
  }
  const auto cache = open_cache(vm, Access::change);
  if (!cache) {
    std::cout << "no cache at " << current_config().cache_dir << "\n";
    return 0;
  }
  require_writable(*cache);
  cache->clear();
  std::cout << "cleared " << cache->config().cache_dir << "\n";
  return 0;
}

int command_mirror(const std::vector<std::string>& args)
{
  po::options_description visible("action (one)");
  visible.add_options()
    ("rebuild", "rewrite programs/ from the store")
    ("remove", "delete programs/ (the store is unaffected; KJIT_MIRROR=0 stops new writes)");
  add_cache_dir_option(visible);
  po::variables_map vm;
  const std::string synopsis = "kjit mirror --rebuild|--remove [--cache-dir DIR]";
  if (!parse_arguments(args, synopsis, visible, {}, {}, vm)) {
    return 0;
  }
  if (vm.count("rebuild") + vm.count("remove") != 1) {
    throw UsageError{"give one of --rebuild or --remove", "usage: " + synopsis + "\n"};
  }
  const auto cache = open_cache(vm, Access::change);
  if (!cache) {
    std::cout << "no cache at " << current_config().cache_dir << "\n";
    return 0;
  }
  require_writable(*cache);
  if (vm.count("rebuild") != 0) {
    std::size_t skipped = 0;
    const std::size_t written = cache->rebuild_mirror(&skipped);
    std::cout << "mirrored " << written << " entries to " << cache->config().cache_dir << "/programs\n";
    if (skipped > 0) {  // as `kjit cache rebuild-mirror`: what could not be mirrored is said and fails
      std::cerr << "kjit mirror: " << skipped << " entries were not mirrored (damaged, or their files could not be written)\n";
      return k_exit_failure;
    }
  } else {
    std::cout << (cache->remove_mirror() ? "removed " : "no mirror at ") << cache->config().cache_dir << "/programs\n";
  }
  return 0;
}

} // namespace kjit::cli
