// kjit version: kjit's, NVRTC's and nvJitLink's versions and whether a driver is usable.
#include "commands.hpp"
#include "options.hpp"

#include <kjit/kjit.hpp>

#include <iostream>

namespace kjit::cli {

int command_version(const std::vector<std::string>& args)
{
  po::variables_map vm;
  if (!parse_arguments(args, "kjit version", po::options_description(), {}, {}, vm)) {
    return 0;
  }
  std::cout << "kjit " << kjit::version() << "\n";
  try {
    const ToolchainVersions v = toolchain_versions();
    std::cout << "NVRTC " << v.nvrtc_major << "." << v.nvrtc_minor << "\n"
              << "nvJitLink " << v.nvjitlink_major << "." << v.nvjitlink_minor << "\n";
  } catch (const Error& e) {
    std::cout << "toolchain: unavailable (" << e.what() << ")\n";
  }
  const DriverStatus& driver = driver_status();
  if (driver.available) {
    std::cout << "driver: available, version " << driver.driver_version / 1000 << "."
              << (driver.driver_version % 1000) / 10 << ", " << driver.device_count << " device(s)\n";
  } else {
    std::cout << "driver: unavailable (" << driver.reason << ")\n";
  }
  return 0;
}

} // namespace kjit::cli
