// kjit cache stats|clear|rebuild-mirror|orphans|verify|path: inspect and maintain a cache folder.
#include "commands.hpp"
#include "options.hpp"
#include "cache_args.hpp"

#include <kjit/kjit.hpp>

#include <cerrno>
#include <iostream>

namespace kjit::cli {

int command_cache(const std::vector<std::string>& args)
{
  po::options_description visible("options");
  visible.add_options()
    ("cache-dir", po::value<std::string>(), "cache folder (default: KJIT_CACHE_DIR or ~/.cache/kjit)")
    ("remove", "with orphans: delete them");
  po::options_description hidden;
  hidden.add_options()("action", po::value<std::string>()->required(), "stats, clear, rebuild-mirror, orphans, verify or path");
  po::positional_options_description positional;
  positional.add("action", 1);
  po::variables_map vm;
  const std::string synopsis =
    "kjit cache stats|clear|rebuild-mirror|orphans [--remove]|verify|path [--cache-dir DIR]";
  if (!parse_arguments(args, synopsis, visible, hidden, positional, vm)) {
    return 0;
  }
  const std::string action = vm["action"].as<std::string>();
  if (action != "stats" && action != "clear" && action != "rebuild-mirror" && action != "orphans" && action != "path" &&
      action != "verify") {
    throw UsageError{"unknown action '" + action + "'", "usage: " + synopsis + "\n"};
  }
  if (vm.count("remove") != 0 && action != "orphans") {
    throw UsageError{"--remove goes with orphans only", "usage: " + synopsis + "\n"};
  }
  if (vm.count("cache-dir") != 0) {
    option::cache_dir(vm["cache-dir"].as<std::string>());
  }
  if (action == "path") {
    std::cout << current_config().cache_dir << "\n";
    return 0;
  }
  // Looking (stats, orphans without --remove) changes nothing: no folder created, a damaged store
  // left where it is; the other actions may replace a damaged store, as a lookup would.
  const bool looking = action == "stats" || (action == "orphans" && vm.count("remove") == 0);
  const auto opened = open_cache(vm, looking ? Access::read : Access::change);
  if (!opened) {
    std::cout << "no cache at " << current_config().cache_dir << "\n";
    return 0;
  }
  Cache& cache = *opened;
  if (action == "stats") {
    std::cout << "cache folder: " << cache.config().cache_dir << "\n"
              << "store: " << cache.store_path() << (cache.writable() ? "" : " (read-only)") << "\n"
              << "entries: " << cache.disk_entries() << "\n";
  } else if (action == "orphans") {
    for (const auto& key : cache.orphans()) {
      std::cout << key << "\n";
    }
    if (vm.count("remove") != 0) {
      const std::size_t removed = cache.remove_orphans();  // before the line: it may throw
      std::cout << "removed " << removed << " orphans\n";
    }
  } else if (action == "clear") {
    require_writable(cache);  // a store that is read-only or could not be opened: nothing cleared
    cache.clear();
    std::cout << "cleared " << cache.config().cache_dir << "\n";
  } else if (action == "verify") {
    if (!cache.has_disk_tier()) {
      throw StoreError("the store of " + cache.config().cache_dir + " could not be opened, so it was not checked", EIO);
    }
    std::string report;
    bool ok = cache.check_store(report);
    if (ok && cache.stats().stores_replaced > 0) {
      ok = false;
      report = "found damaged when it was opened; moved aside and replaced by an empty store";
    }
    std::cout << (ok ? "ok: " : "damaged: ") << report << "\n";
    return ok ? 0 : k_exit_failure;
  } else {
    if (!cache.has_disk_tier()) {
      throw Error("no store to mirror in " + cache.config().cache_dir);
    }
    std::size_t skipped = 0;
    const std::size_t written = cache.rebuild_mirror(&skipped);
    std::cout << "mirrored " << written << " entries to " << cache.config().cache_dir << "/programs\n";
    if (skipped > 0 || !cache.writable()) {
      std::cerr << "kjit cache: " << skipped << " entries were not mirrored"
                << (cache.writable() ? " (damaged, or their files could not be written)" : " (the cache folder is read-only)")
                << "\n";
      return k_exit_failure;
    }
  }
  return 0;
}

} // namespace kjit::cli
