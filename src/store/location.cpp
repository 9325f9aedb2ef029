// Network-filesystem detection with statfs(2) magic numbers, plus FUSE subtypes from mountinfo.
#include "store/location.hpp"

#include "util/hash.hpp"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

namespace kjit::store {

namespace {

constexpr long k_fuse_magic = 0x65735546;


} // namespace

// The filesystem type of the mount holding `path`, from /proc/self/mountinfo (longest prefix).
std::string mount_fs_type(const std::string& path)
{
  std::ifstream mountinfo("/proc/self/mountinfo");
  std::string line;
  std::string best_point;
  std::string best_type;
  while (std::getline(mountinfo, line)) {
    std::istringstream fields(line);
    std::string id, parent, device, root, point, options, field;
    fields >> id >> parent >> device >> root >> point >> options;
    while (fields >> field && field != "-") {
    }
    std::string type;
    fields >> type;
    const bool covers = path.rfind(point, 0) == 0 &&
                        (point == "/" || path.size() == point.size() || path[point.size()] == '/');
    if (covers && point.size() >= best_point.size()) {
      best_point = point;
      best_type = type;
    }
  }
  return best_type;
}

bool is_network_magic(long magic)
{
  switch (magic) {
  case 0x6969:      // NFS
  case 0x517B:      // SMB
  case 0xFF534D42:  // CIFS
  case 0xFE534D42:  // SMB2
  case 0x0BD00BD0:  // Lustre
  case 0x47504653:  // GPFS
  case 0x00C36400:  // CephFS
  case 0x5346414F:  // AFS
  case 0x01021997:  // 9p (v9fs)
  case 0x19830326:  // BeeGFS
  case 0xAAD7AAEA:  // PanFS
  case 0x013111A8:  // IBRIX
  case 0x73757245:  // Coda
  case 0x564c:      // NCP
    return true;
  default:
    return false;
  }
}

bool on_network_filesystem(const std::string& path, std::string& fs_name)
{
  std::string probe = path;
  struct statfs info {};
  while (::statfs(probe.c_str(), &info) != 0) {
    const auto slash = probe.rfind('/');
    if (slash == std::string::npos || probe == "/") {
      return false;
    }
    probe = slash == 0 ? "/" : probe.substr(0, slash);
  }
  if (is_network_magic(static_cast<long>(info.f_type))) {
    fs_name = mount_fs_type(probe);
    return true;
  }
  if (static_cast<long>(info.f_type) == k_fuse_magic) {
    fs_name = mount_fs_type(probe);
    for (const char* network : {"sshfs", "s3fs", "gcsfuse", "glusterfs", "rclone", "davfs", "ceph", "lustre"}) {
      if (fs_name.find(network) != std::string::npos) {
        return true;
      }
    }
  }
  return false;
}

std::string store_dir_for(const std::string& cache_dir, bool network)
{
  if (!network) {
    return cache_dir + "/store";
  }
  const char* runtime = std::getenv("XDG_RUNTIME_DIR");
  const std::string base = runtime != nullptr && *runtime == '/' ? std::string(runtime) + "/kjit"
                                                                  : "/tmp/kjit-" + std::to_string(::getuid());
  return base + "/store-" + util::to_hex(util::sha256(cache_dir)).substr(0, 16);
}

} // namespace kjit::store
