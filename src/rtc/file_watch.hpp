// What NVRTC looks at on disk while it compiles: its calls of open, fopen, stat, access and the
// like (libnvrtc's imports, redirected by util::hook_imports) record each path they name while a
// FileWatch is alive, then call on as before. NVRTC 13.0 has no dependency output (-M, -MD);
// this is one, exact for what it finds and for what it looks for and does not find.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kjit::rtc {

struct FileAccess {
  std::string path;        // as NVRTC named it: relative to the working directory, or absolute
  bool found = false;      // the call succeeded
  bool directory = false;  // a folder (stat of one, opendir)
  bool writes = false;     // it may change the file system (open for writing, mkdir, unlink…)
  bool opened = false;     // open or fopen: its content may be read (else only its kind or stamp)
  bool mine = false;       // made on the thread that started the watch (else another thread's NVRTC use)
  int error = 0;           // errno when not found
  std::uint64_t device = 0;  // what was found (the opened file, or the one stat() saw); 0 when unknown
  std::uint64_t inode = 0;
};

class FileWatch {
public:
  // Whether NVRTC's imports are redirected: done once, when NVRTC is loaded (false before, and
  // where the library's tables can't be rewritten; then no FileWatch can see anything).
  static bool available();

  // The process's one watch, or null while another is alive (a second compile of this process
  // is not watched: NVRTC runs one at a time, and a watch would see both). A forked child starts
  // with none alive and nothing recording.
  static std::unique_ptr<FileWatch> claim();
  // Records from now on, in every thread, those of this thread marked mine(); false (nothing
  // recorded) when NVRTC's imports can't be redirected (NVRTC must be loaded).
  bool start();
  ~FileWatch();
  FileWatch(const FileWatch&) = delete;
  FileWatch& operator=(const FileWatch&) = delete;

  // What NVRTC did that names no path kjit can check (a chdir, a raw syscall on a file, a new
  // process); empty when nothing.
  std::string blind() const;
  // The accesses recorded, in order.
  std::vector<FileAccess> accesses() const;

private:
  FileWatch() = default;
};

} // namespace kjit::rtc
