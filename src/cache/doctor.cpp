// kjit doctor: the toolkit, the compilers, the driver, the cache folder, the store, the bundles and the remote.
#include <kjit/cache.hpp>
#include <kjit/compile.hpp>
#include <kjit/driver.hpp>
#include <kjit/error.hpp>

#include "bundle/reader.hpp"
#include "remote/server_check.hpp"
#include "rtc/toolkit.hpp"
#include "store/location.hpp"
#include "store/record.hpp"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

namespace kjit {

namespace {

using Status = HealthCheck::Status;

bool exists(const std::string& path)
{
  struct stat st {};
  return !path.empty() && ::stat(path.c_str(), &st) == 0;
}

// The filesystem type of the mount holding `path`, e.g. "ext4".
std::string filesystem_of(const std::string& path)
{
  const std::string type = store::mount_fs_type(path);
  return type.empty() ? "unknown" : type;
}

void check_toolchain(const Config& config, std::vector<HealthCheck>& out)
{
  try {
    const rtc::Toolkit toolkit = rtc::find_toolkit(config);
    const bool complete = exists(toolkit.nvrtc_path) && exists(toolkit.nvjitlink_path);
    out.push_back({complete ? Status::ok : Status::warning, "toolkit",
                   toolkit.root + (complete ? "" : " (NVRTC or nvJitLink missing: cached kernels only, misses fail)")});
  } catch (const Error& e) {
    out.push_back({Status::warning, "toolkit", e.what()});
  }
  try {
    const ToolchainVersions v = toolchain_versions();
    out.push_back({Status::ok, "NVRTC", std::to_string(v.nvrtc_major) + "." + std::to_string(v.nvrtc_minor)});
    out.push_back({Status::ok, "nvJitLink", std::to_string(v.nvjitlink_major) + "." + std::to_string(v.nvjitlink_minor)});
  } catch (const Error& e) {
    out.push_back({Status::warning, "NVRTC", std::string("not loadable: ") + e.what()});
  }
  const DriverStatus& driver = driver_status();
  if (driver.available) {
    char text[96];
    std::snprintf(text, sizeof text, "%d.%d, %d device(s)", driver.driver_version / 1000,
                  (driver.driver_version % 1000) / 10, driver.device_count);
    out.push_back({Status::ok, "driver", text});
  } else {
    out.push_back({Status::warning, "driver", driver.reason + " (compiling and caching still work; loading needs a GPU)"});
  }
}

void check_folder(const Config& config, std::vector<HealthCheck>& out)
{
  const std::string& dir = config.cache_dir;
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    out.push_back({Status::warning, "cache folder", dir + " does not exist yet (created by the first compile)"});
    return;
  }
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
  const bool foreign = st.st_uid != ::geteuid();
  const bool open_to_others = (st.st_mode & 022) != 0;
  const bool writable = ::access(dir.c_str(), W_OK) == 0;
  Status status = Status::ok;
  std::string detail = dir + ", mode " + mode + ", owner uid " + std::to_string(st.st_uid);
  if ((foreign || open_to_others) && !config.shared_cache) {
    status = Status::error;
    detail += foreign ? "; belongs to another user" : "; group/others can write it";
    detail += " (refused unless KJIT_SHARED_CACHE=1)";
  }
  detail += writable ? ", writable" : ", read-only (hits only; misses kept in memory)";
  out.push_back({status, "cache folder", detail});
  std::string network_name;
  const bool network = store::on_network_filesystem(dir, network_name);
  out.push_back({network ? Status::warning : Status::ok, "filesystem",
                 filesystem_of(dir) + (network ? " (network: the store lives in " +
                                                   store::store_dir_for(dir, true) + ")"
                                               : "")});
}

void check_store(const Config& config, std::vector<HealthCheck>& out)
{
  if (config.disable_cache || !exists(config.cache_dir)) {
    return;
  }
  try {
    Config looking = config;
    looking.inspect_only = true;  // a health check changes nothing, a damaged store included
    Cache cache(looking);
    if (!cache.store_exists()) {
      out.push_back({Status::ok, "store", "none yet in " + config.cache_dir + " (made by the first compile)"});
      return;
    }
    if (!cache.has_disk_tier()) {
      out.push_back({Status::error, "store", "the store in " + config.cache_dir +
                                               " could not be opened or is damaged (see the warning above; left as it is)"});
      return;
    }
    std::string walk;
    const bool walked_sound = cache.check_store(walk);
    if (!walked_sound && walk.find(": not checked: ") != std::string::npos) {
      // The walk could not run (no memory to map the store, no child): no verdict either way.
      out.push_back({Status::warning, "store", walk + "; left as it is"});
      return;
    }
    if (!walked_sound || cache.stats().stores_replaced > 0) {
      out.push_back({Status::error, "store",
                     cache.store_path() + ": damaged (" + (walked_sound ? "found when it was opened" : walk) +
                       "); left as it is: kjit verify --repair replaces it"});
      return;
    }
    const VerifyReport report = cache.verify(Repair::no);
    const std::size_t orphans = cache.orphans().size();
    // A record another kjit version wrote (its format number differs, e.g. what this folder held
    // before an upgrade) is sound for that version: counted apart, a warning, not damage.
    std::size_t other_format = 0;
    for (const auto& bad : report.bad) {
      other_format += store::of_another_format(bad.second) ? 1 : 0;
    }
    const std::size_t damaged = report.bad.size() - other_format;
    std::string detail = cache.store_path() + ": " + std::to_string(report.checked) + " entries, " +
                         std::to_string(damaged) + " damaged, " + std::to_string(other_format) +
                         " written by another kjit version, " + std::to_string(orphans) + " from other toolchains";
    if (damaged > 0) {
      detail += " (kjit verify --repair moves the damaged ones aside)";
    } else if (other_format > 0) {
      detail += " (this version never reads them; if no other version uses this folder, "
                "kjit verify --repair moves them aside)";
    }
    const Status status = damaged > 0 ? Status::error : other_format > 0 ? Status::warning : Status::ok;
    out.push_back({status, "store", detail});
  } catch (const Error& e) {
    out.push_back({Status::error, "store", e.what()});
  }
}

} // namespace

std::vector<HealthCheck> diagnose(const Config& config)
{
  std::vector<HealthCheck> out;
  check_toolchain(config, out);
  check_folder(config, out);
  check_store(config, out);
  for (const std::string& path : config.bundles) {
    try {
      const bundle::Reader reader(path);
      reader.verify_data();
      out.push_back({Status::ok, "bundle", path + ": " + std::to_string(reader.index().size()) + " entries"});
    } catch (const Error& e) {
      out.push_back({Status::error, "bundle", e.what()});
    }
  }
  for (HealthCheck& check : remote::check_servers(config)) {
    out.push_back(std::move(check));
  }
  return out;
}

} // namespace kjit
