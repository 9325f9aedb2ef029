// Reading whole files and writing them atomically (temp file in the same folder + checked rename).
#pragma once

#include "util/unique_handle.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <system_error>

namespace kjit::util {

// The file's content, or nullopt if it can't be opened or read (`error` says why).
std::optional<std::string> read_file(const std::string& path, std::error_code& error);

// Whether a write waits for the disk (fsync) before the rename.
enum class Durability { fsync, none };

// Writes `content` to `name` inside the open folder `dir_fd`: a temp file is written (and
// fsync'ed with Durability::fsync) and renamed over `name`; readers see the old or the new
// file, never a part. Symlinks are never followed. Returns an error instead of throwing.
std::error_code write_file_atomic(int dir_fd, const std::string& name, std::string_view content, int mode = 0644,
                                  Durability durability = Durability::fsync);

// Convenience: atomic write to a path (its folder must exist).
std::error_code write_file_atomic(const std::string& path, std::string_view content, int mode = 0644);

// Opens (creating with `mode` if missing) the sub-folder `name` of `dir_fd` without following a
// symlink. `name` must be a single path component.
std::optional<UniqueFd> open_subdir(int dir_fd, const std::string& name, bool create, int mode, std::error_code& error);

// Creates a folder and its parents with `mode` (existing ones are left as they are).
std::error_code create_directories(const std::string& path, int mode);

// Modes of what kjit makes in a cache folder shared by a group (KJIT_SHARED_CACHE, a folder its
// group may write): `mode`, the owner's (0700, 0644, 0755…), given to the group as well and to
// nothing else; a folder is setgid too, so what is made in it keeps the group. In a folder only
// its owner writes, `mode` as it is. A mode that gives the group write access is set exactly by
// the functions above (and by set_group_mode()), whatever the umask: a umask of 022 would
// otherwise leave the group unable to write.
int mode_in(int dir_fd, int mode, bool folder);
int mode_in(const std::string& dir, int mode, bool folder);
// fchmod(fd, mode) when `mode` gives the group write access (the umask may have taken it away).
void set_group_mode(int fd, int mode);

// Whether `path` is (after symlinks) a regular file; a folder.
bool is_regular_file(const std::string& path);
bool is_directory(const std::string& path);

// `dir` as realpath() gives it (`dir` itself when that fails); with `fd` open on it, the kernel's
// name for the open folder (one readlink of /proc/self/fd), else as realpath().
std::string canonical_path(const std::string& dir);
std::string canonical_path(const std::string& dir, int fd);

} // namespace kjit::util
