// Where the LMDB store may live: never on a network filesystem (LMDB's locking needs a local one).
#pragma once

#include <string>

namespace kjit::store {

// The filesystem type of the mount holding `path` (from /proc/self/mountinfo, longest mount
// point prefix), e.g. "ext4"; empty if none is found.
std::string mount_fs_type(const std::string& path);

// True for NFS, SMB/CIFS, Lustre, GPFS, CephFS, AFS, 9p, BeeGFS, and FUSE network mounts (sshfs…).
// `path` (or its nearest existing parent) is examined with statfs() and /proc/self/mountinfo.
bool on_network_filesystem(const std::string& path, std::string& fs_name);

// True if the statfs f_type `magic` is a network filesystem.
bool is_network_magic(long magic);

// The folder for the store of `cache_dir`: <cache_dir>/store, or, when `network` is true, a
// node-local folder under $XDG_RUNTIME_DIR (else /tmp) named after the cache folder.
std::string store_dir_for(const std::string& cache_dir, bool network);

} // namespace kjit::store
