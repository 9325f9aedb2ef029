// kjit export / import: move cache entries between machines in one checksummed bundle file.
#include "cache_args.hpp"

#include <cerrno>
#include <iostream>

namespace kjit::cli {

namespace {

po::positional_options_description file_argument(po::options_description& hidden)
{
  hidden.add_options()("file", po::value<std::string>()->required(), "bundle file");
  po::positional_options_description positional;
  positional.add("file", 1);
  return positional;
}

} // namespace

int command_export(const std::vector<std::string>& args)
{
  po::options_description visible("options");
  add_filter_options(visible);
  add_cache_dir_option(visible);
  po::options_description hidden;
  const auto positional = file_argument(hidden);
  po::variables_map vm;
  if (!parse_arguments(args, "kjit export FILE [--name NAME] [--arch ARCH] [--cache-dir DIR]", visible, hidden,
                       positional, vm)) {
    return 0;
  }
  const EntryFilter filter = parsed_filter(vm);
  const auto cache = open_cache(vm, Access::read);
  if (!cache) {
    throw Error("no cache at " + current_config().cache_dir + " (nothing to export)");
  }
  if (!cache->has_disk_tier()) {  // damaged or unreadable: an empty bundle would ship as if all was well
    throw StoreError("the store of " + cache->config().cache_dir + " could not be read (see above); nothing exported", EIO);
  }
  const std::string file = vm["file"].as<std::string>();
  const BundleReport report = cache->export_bundle(file, filter);
  std::cout << "exported " << report.entries << " entries and " << report.scripts << " script and table records to "
            << file << "\n";
  if (report.skipped_damaged > 0) {
    std::cerr << "kjit export: left out " << report.skipped_damaged << " damaged entries (see kjit verify)\n";
  }
  return 0;
}

int command_import(const std::vector<std::string>& args)
{
  po::options_description visible("options");
  add_cache_dir_option(visible);
  po::options_description hidden;
  const auto positional = file_argument(hidden);
  po::variables_map vm;
  if (!parse_arguments(args, "kjit import FILE [--cache-dir DIR]", visible, hidden, positional, vm)) {
    return 0;
  }
  const std::string file = vm["file"].as<std::string>();
  const auto cache = open_cache(vm, Access::write);
  const BundleReport report = cache->import_bundle(file);
  std::cout << "imported " << report.entries << " entries and " << report.scripts << " script and table records from "
            << file << " (" << report.already_present << " entries already present)\n";
  for (const auto& [key, why] : report.rejected) {
    std::cerr << "kjit import: rejected " << key << ": " << why << "\n";
  }
  return report.rejected.empty() ? 0 : k_exit_failure;
}

} // namespace kjit::cli
