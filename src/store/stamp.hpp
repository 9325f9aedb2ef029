// The store's "checked" stamp: data.mdb's state after the last write of a process that had
// walked it (or trusted an earlier stamp), so that the next process's first write needs no walk.
// Private to src/store/.
#pragma once

#include <cstddef>
#include <ctime>
#include <optional>
#include <string>
#include <sys/types.h>

struct MDB_env;  // lmdb.h's

namespace kjit::store {

// What a stamp compares: any write to data.mdb through the filesystem changes its change time
// (ctime, which no call can set back) and every commit its last transaction id.
struct FileState {
  dev_t dev = 0;
  ino_t ino = 0;
  off_t size = 0;
  timespec ctime{};
  std::size_t txnid = 0;
  bool operator==(const FileState& other) const;
  bool operator!=(const FileState& other) const { return !(*this == other); }
};

// data.mdb of `env` as it is now; nullopt if it can't be read.
std::optional<FileState> file_state(MDB_env* env);

// True if `dir`/checked names exactly `now`; false for a missing or unreadable stamp. A write by
// another program shows as a new change time: the stamp's writer read data.mdb's change time
// just before writing it, and since Linux 6.13 a change after such a read gets a finer, later
// time; older kernels give all changes within one clock tick (1–10 ms) the same time, so a write
// by another program within a tick of a kjit process's last write can go unseen there. So does,
// on any kernel, a write by another program while a kjit write transaction is open (between its
// first look at data.mdb and its commit's last write): the commit's change time covers it.
bool stamp_matches(const std::string& dir, const FileState& now);

// Writes `dir`/checked for `state` (atomic, no fsync: a lost stamp costs one walk). Never throws.
void write_stamp(const std::string& dir, const FileState& state, int mode) noexcept;

} // namespace kjit::store
