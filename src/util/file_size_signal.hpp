// Writes past the file-size limit (ulimit -f) as an error, not a SIGXFSZ that kills the host.
#pragma once

#include <csignal>

namespace kjit::util {

// While it lives, SIGXFSZ is blocked on this thread: a write or ftruncate past RLIMIT_FSIZE fails
// with EFBIG (or is short: LMDB says EIO) instead of ending the process, whose default action for
// it is to terminate. A SIGXFSZ raised meanwhile is taken back before the thread's mask is
// restored, so it is never delivered late. Nested uses do nothing. Never throws.
class FileSizeSignalBlock {
public:
  FileSizeSignalBlock() noexcept;
  ~FileSizeSignalBlock();
  FileSizeSignalBlock(const FileSizeSignalBlock&) = delete;
  FileSizeSignalBlock& operator=(const FileSizeSignalBlock&) = delete;

private:
  sigset_t m_old{};
  bool m_blocked = false;  // this one blocked it (it was not blocked already)
};

// True when RLIMIT_FSIZE is set and a file of `size` bytes is within `margin` of it.
bool near_file_size_limit(unsigned long long size, unsigned long long margin);

} // namespace kjit::util
