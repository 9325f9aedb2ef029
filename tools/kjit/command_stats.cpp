// kjit stats: entries, bytes by kind, compile time stored in a cache folder.
#include "cache_args.hpp"

#include <cstdio>
#include <iostream>

namespace kjit::cli {

int command_stats(const std::vector<std::string>& args)
{
  po::options_description visible("options");
  visible.add_options()("json", "as JSON");
  add_cache_dir_option(visible);
  po::variables_map vm;
  if (!parse_arguments(args, "kjit stats [--json] [--cache-dir DIR]", visible, {}, {}, vm)) {
    return 0;
  }
  const auto cache = open_cache(vm, Access::read);
  const DiskUsage u = cache ? cache->usage() : DiskUsage{};
  const std::string dir = current_config().cache_dir;
  if (vm.count("json") != 0) {
    char ms[32];
    std::snprintf(ms, sizeof ms, "%.3f", u.compile_ms_stored);
    std::cout << "{\"cache_dir\": " << json_string(dir) << ", \"exists\": " << (cache ? "true" : "false")
              << ", \"writable\": " << (cache && cache->writable() ? "true" : "false") << ", \"entries\": " << u.entries
              << ", \"failures\": " << u.failures << ", \"damaged\": " << u.damaged
              << ", \"quarantined\": " << u.quarantined << ", \"bytes\": {\"records\": " << u.record_bytes
              << ", \"cubin\": " << u.cubin_bytes << ", \"ptx\": " << u.ptx_bytes << ", \"source\": " << u.source_bytes
              << ", \"log\": " << u.log_bytes << ", \"store_file\": " << u.store_file_bytes
              << ", \"mirror\": " << u.mirror_bytes << "}, \"compile_ms_stored\": " << ms << "}\n";
    return 0;
  }
  std::cout << "cache folder: " << dir << (cache ? (cache->writable() ? "" : " (read-only)") : " (does not exist)")
            << "\n";
  if (cache) {
    std::cout << "store: " << cache->store_path() << "\n";
  }
  std::cout << "entries: " << u.entries << " (" << u.failures << " compile errors, " << u.damaged << " damaged, "
            << u.quarantined << " quarantined)\n"
            << "records: " << format_bytes(u.record_bytes) << " (cubin " << format_bytes(u.cubin_bytes) << ", PTX "
            << format_bytes(u.ptx_bytes) << ", source " << format_bytes(u.source_bytes) << ", logs "
            << format_bytes(u.log_bytes) << ")\n"
            << "store file: " << format_bytes(u.store_file_bytes) << " on disk\n"
            << "mirror: " << format_bytes(u.mirror_bytes) << " on disk\n";
  std::printf("compile time stored: %.1f s (each hit on an entry saves its compile time)\n",
              u.compile_ms_stored / 1000.0);
  return 0;
}

} // namespace kjit::cli
