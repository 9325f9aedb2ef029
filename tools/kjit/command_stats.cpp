// kjit stats: entries, bytes by kind, compile time stored in a cache folder.
#include "cache_args.hpp"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <sys/stat.h>
#include <utility>
#include <vector>

namespace kjit::cli {

namespace {

// Each UncachedReason with its count in `u`, and their sum.
std::vector<std::pair<UncachedReason, std::uint64_t>> uncached_by_reason(const DiskUsage& u, std::uint64_t& total)
{
  std::vector<std::pair<UncachedReason, std::uint64_t>> out{
    {UncachedReason::formed_name, u.uncached_formed_name}, {UncachedReason::disk_name, u.uncached_disk_name},
    {UncachedReason::time, u.uncached_time},               {UncachedReason::file_option, u.uncached_file_option},
    {UncachedReason::probe, u.uncached_probe},             {UncachedReason::names_file, u.uncached_names_file},
    {UncachedReason::environment, u.uncached_environment}};
  total = 0;
  for (const auto& [reason, count] : out) {
    total += count;
  }
  return out;
}

} // namespace

int command_stats(const std::vector<std::string>& args)
{
  po::options_description visible("options");
  visible.add_options()
    ("json", "as JSON")
    ("zero", "zero the hit and miss counts (the entries stay)");
  add_cache_dir_option(visible);
  po::variables_map vm;
  if (!parse_arguments(args, "kjit stats [--json] [--zero] [--cache-dir DIR]", visible, {}, {}, vm)) {
    return 0;
  }
  const auto cache = open_cache(vm, vm.count("zero") != 0 ? Access::change : Access::read);
  if (vm.count("zero") != 0) {
    if (cache) {
      cache->zero_usage();
    }
    std::cout << "zeroed the hit and miss counts of " << current_config().cache_dir << "\n";
    return 0;
  }
  const DiskUsage u = cache ? cache->usage() : DiskUsage{};
  const std::string dir = current_config().cache_dir;
  if (vm.count("json") != 0) {
    char ms[32];
    std::snprintf(ms, sizeof ms, "%.3f", u.compile_ms_stored);
    std::cout << "{\"cache_dir\": " << json_string(dir) << ", \"exists\": " << (cache ? "true" : "false")
              << ", \"writable\": " << (cache && could_write(*cache) ? "true" : "false") << ", \"entries\": " << u.entries
              << ", \"failures\": " << u.failures << ", \"damaged\": " << u.damaged
              << ", \"quarantined\": " << u.quarantined << ", \"bytes\": {\"records\": " << u.record_bytes
              << ", \"cubin\": " << u.cubin_bytes << ", \"ptx\": " << u.ptx_bytes << ", \"source\": " << u.source_bytes
              << ", \"log\": " << u.log_bytes << ", \"store_file\": " << u.store_file_bytes
              << ", \"mirror\": " << u.mirror_bytes << "}, \"compile_ms_stored\": " << ms;
    std::snprintf(ms, sizeof ms, "%.3f", u.compile_ms_saved);
    std::cout << ", \"lookups\": {\"processes\": " << u.processes << ", \"memory_hits\": " << u.memory_hits
              << ", \"disk_hits\": " << u.disk_hits << ", \"bundle_hits\": " << u.bundle_hits
              << ", \"misses\": " << u.misses << ", \"compiles\": " << u.compiles << ", \"remote_hits\": " << u.remote_hits
              << ", \"remote_misses\": " << u.remote_misses << ", \"remote_errors\": " << u.remote_errors
              << ", \"remote_bytes_read\": " << u.remote_bytes_read
              << ", \"remote_bytes_written\": " << u.remote_bytes_written << ", \"compile_ms_saved\": " << ms;
    std::snprintf(ms, sizeof ms, "%.3f", u.compile_ms_spent);
    std::cout << ", \"compile_ms_spent\": " << ms;
    std::uint64_t uncached = 0;
    const auto reasons = uncached_by_reason(u, uncached);
    std::cout << ", \"uncached_compiles\": " << uncached << ", \"uncached_by_reason\": {";
    for (std::size_t i = 0; i < reasons.size(); ++i) {
      std::string name = to_string(reasons[i].first);
      std::replace(name.begin(), name.end(), ' ', '_');
      std::cout << (i == 0 ? "" : ", ") << json_string(name) << ": " << reasons[i].second;
    }
    std::cout << "}}}\n";
    return 0;
  }
  struct stat st {};
  const char* const none = ::stat(dir.c_str(), &st) == 0 ? " (no store yet)" : " (does not exist)";
  std::cout << "cache folder: " << dir << (cache ? (could_write(*cache) ? "" : " (read-only)") : none)
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
  const auto n = [](std::uint64_t value) { return static_cast<unsigned long long>(value); };
  const std::uint64_t hits = u.memory_hits + u.disk_hits + u.bundle_hits + u.remote_hits;
  std::printf("lookups: %llu hits (memory %llu, disk %llu, bundle %llu, remote %llu), %llu misses, %llu compiles, by %llu "
              "processes\n",
              n(hits), n(u.memory_hits), n(u.disk_hits), n(u.bundle_hits), n(u.remote_hits), n(u.misses), n(u.compiles),
              n(u.processes));
  if (u.remote_hits + u.remote_misses + u.remote_errors + u.remote_bytes_written != 0) {
    std::cout << "remote: " << u.remote_hits << " hits, " << u.remote_misses << " misses, " << u.remote_errors
              << " errors; " << format_bytes(u.remote_bytes_read) << " read, " << format_bytes(u.remote_bytes_written)
              << " written\n";
  }
  std::uint64_t uncached = 0;
  const auto reasons = uncached_by_reason(u, uncached);
  if (uncached != 0) {
    // Each is a compile on every lookup: what these programs lose (docs/includes.md says why).
    std::cout << "not cached: " << uncached << " compiles (";
    const char* separator = "";
    for (const auto& [reason, count] : reasons) {
      if (count != 0) {
        std::cout << separator << to_string(reason) << " " << count;
        separator = ", ";
      }
    }
    std::cout << "); each compile says which program and why on stderr\n";
  }
  std::printf("compile time saved by hits: %.1f s; spent on misses: %.1f s\n", u.compile_ms_saved / 1000.0,
              u.compile_ms_spent / 1000.0);
  return 0;
}

} // namespace kjit::cli
