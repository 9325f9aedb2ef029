// What NVRTC looks at on disk while it compiles: its calls of open, fopen, stat, access and the
// like (libnvrtc's imports, redirected by util::hook_imports) record each path they name while a
// FileWatch is alive, then call on as before. NVRTC 13.0 has no dependency output (-M, -MD);
// this is one, exact for what it finds and for what it looks for and does not find.
#pragma once

#include <string>
#include <vector>

namespace kjit::rtc {

struct FileAccess {
  std::string path;        // as NVRTC named it: relative to the working directory, or absolute
  bool found = false;      // the call succeeded
  bool directory = false;  // a folder (stat of one, opendir)
  bool writes = false;     // it may change the file system (open for writing, mkdir, unlink…)
  bool opened = false;     // open or fopen: its content may be read (else only its kind or stamp)
  int error = 0;           // errno when not found
};

class FileWatch {
public:
  // Whether NVRTC's imports are redirected: done once, when NVRTC is loaded (false before, and
  // where the library's tables can't be rewritten; then no FileWatch can see anything).
  static bool available();

  // Records from now on, in every thread (one FileWatch at a time in a process: a second waits).
  FileWatch();
  ~FileWatch();
  FileWatch(const FileWatch&) = delete;
  FileWatch& operator=(const FileWatch&) = delete;

  // What NVRTC did that names no path kjit can check (a chdir, a raw syscall on a file, a new
  // process); empty when nothing.
  std::string blind() const;
  // The accesses recorded, in order.
  std::vector<FileAccess> accesses() const;
};

} // namespace kjit::rtc
