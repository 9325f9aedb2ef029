// See file_watch.hpp. The replacements forward to libc as libnvrtc's own calls would have; they
// record only while a FileWatch is alive, so a host's own use of NVRTC pays one atomic load.
#include "rtc/file_watch.hpp"

#include "rtc/nvrtc_library.hpp"
#include "util/import_hooks.hpp"

#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <pthread.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio_ext.h>
#include <mutex>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace kjit::rtc {

namespace {

std::atomic<bool> g_recording{false};
std::mutex g_mutex;  // guards what follows
bool g_taken = false;  // a FileWatch is alive
std::vector<FileAccess> g_accesses;
std::string g_blind;
thread_local bool t_watching = false;  // this thread started the watch alive

// What a successful call found: `st` (stat's), or the file open on `fd`.
struct Found {
  std::uint64_t device = 0;
  std::uint64_t inode = 0;
};

Found found_at(int fd)
{
  struct stat st {};
  return fd >= 0 && ::fstat(fd, &st) == 0 ? Found{st.st_dev, st.st_ino} : Found{};
}

void note(const char* path, bool found, bool directory, bool writes, int error, bool opened = false, Found what = {})
{
  if (!g_recording.load(std::memory_order_acquire)) {
    return;
  }
  const int saved = errno;
  {
    std::lock_guard lock(g_mutex);
    g_accesses.push_back({path != nullptr ? path : "", found, directory, writes, opened, t_watching,
                          found ? 0 : error, what.device, what.inode});
  }
  errno = saved;
}

// A fork while a watch is alive (another thread compiling): the child has neither that thread
// nor its watch, and the lock is not held by a thread it lacks.
void before_fork()
{
  g_mutex.lock();
}

void after_fork_parent()
{
  g_mutex.unlock();
}

void after_fork_child()
{
  g_recording.store(false, std::memory_order_relaxed);
  g_taken = false;
  g_accesses.clear();
  g_blind.clear();
  t_watching = false;
  g_mutex.unlock();
}

const bool g_fork_handlers = ::pthread_atfork(before_fork, after_fork_parent, after_fork_child) == 0;

void note_blind(const char* what)
{
  if (!g_recording.load(std::memory_order_acquire)) {
    return;
  }
  const int saved = errno;
  {
    std::lock_guard lock(g_mutex);
    if (g_blind.empty()) {
      g_blind = what;
    }
  }
  errno = saved;
}

bool names_a_file(long number)
{
  switch (number) {
#ifdef SYS_open
  case SYS_open:
#endif
#ifdef SYS_stat
  case SYS_stat:
#endif
#ifdef SYS_lstat
  case SYS_lstat:
#endif
#ifdef SYS_access
  case SYS_access:
#endif
#ifdef SYS_readlink
  case SYS_readlink:
#endif
#ifdef SYS_openat2
  case SYS_openat2:
#endif
#ifdef SYS_faccessat2
  case SYS_faccessat2:
#endif
  case SYS_openat:
  case SYS_newfstatat:
  case SYS_statx:
  case SYS_faccessat:
  case SYS_readlinkat:
  case SYS_chdir:
  case SYS_fchdir:
  case SYS_execve:
  case SYS_execveat:
  case SYS_getdents64:
    return true;
  default:
    return false;
  }
}

extern "C" {

int kjit_watch_open(const char* path, int flags, ...)
{
  mode_t mode = 0;
  if ((flags & O_CREAT) != 0 || (flags & O_TMPFILE) == O_TMPFILE) {
    va_list args;
    va_start(args, flags);
    mode = static_cast<mode_t>(va_arg(args, int));
    va_end(args);
  }
  const int fd = ::open(path, flags, mode);
  const int error = errno;
  note(path, fd >= 0, false, (flags & (O_WRONLY | O_RDWR | O_CREAT | O_TRUNC)) != 0, error, true,
       g_recording.load(std::memory_order_acquire) ? found_at(fd) : Found{});
  errno = error;
  return fd;
}

// NVRTC reads each header with getc() on the FILE it opened, on the thread that compiles, and
// closes it before it returns. In a process with more than one thread (kjit's own beside NVRTC
// on a miss, any host's) glibc locks the stream for every getc(): 2.5 times NVRTC's time in
// getc(), about 17 ms of a vendored CCCL's 1.1 s compile. No other thread has that FILE, so its
// locking is left to its only user (__fsetlocking(3)).
FILE* unlocked(FILE* file)
{
  if (file != nullptr) {
    const int error = errno;
    ::__fsetlocking(file, FSETLOCKING_BYCALLER);
    errno = error;
  }
  return file;
}

void note_fopen(const char* path, const char* mode, FILE* file)
{
  const int error = errno;
  const bool writes = mode != nullptr && (mode[0] != 'r' || std::strchr(mode, '+') != nullptr);
  note(path, file != nullptr, false, writes, error, true,
       file != nullptr && g_recording.load(std::memory_order_acquire) ? found_at(::fileno(file)) : Found{});
  errno = error;
}

FILE* kjit_watch_fopen(const char* path, const char* mode)
{
  FILE* file = std::fopen(path, mode);
  note_fopen(path, mode, file);
  return unlocked(file);
}

FILE* kjit_watch_fopen64(const char* path, const char* mode)
{
  FILE* file = ::fopen64(path, mode);
  note_fopen(path, mode, file);
  return unlocked(file);
}

// glibc's old stat entry points (libnvrtc 13.0 imports __xstat and __lxstat); the `version`
// glibc passes names today's struct stat on x86-64 and AArch64.
int kjit_watch_xstat(int, const char* path, struct stat* buffer)
{
  const int result = ::stat(path, buffer);
  note(path, result == 0, result == 0 && S_ISDIR(buffer->st_mode), false, errno, false,
       result == 0 ? Found{buffer->st_dev, buffer->st_ino} : Found{});
  return result;
}

int kjit_watch_lxstat(int, const char* path, struct stat* buffer)
{
  const int result = ::lstat(path, buffer);
  note(path, result == 0, result == 0 && S_ISDIR(buffer->st_mode), false, errno, false,
       result == 0 && !S_ISLNK(buffer->st_mode) ? Found{buffer->st_dev, buffer->st_ino} : Found{});
  return result;
}

int kjit_watch_stat(const char* path, struct stat* buffer)
{
  return kjit_watch_xstat(0, path, buffer);
}

int kjit_watch_lstat(const char* path, struct stat* buffer)
{
  return kjit_watch_lxstat(0, path, buffer);
}

int kjit_watch_access(const char* path, int mode)
{
  const int result = ::access(path, mode);
  note(path, result == 0, false, false, errno);
  return result;
}

DIR* kjit_watch_opendir(const char* path)
{
  DIR* dir = ::opendir(path);
  note(path, dir != nullptr, true, false, errno);
  return dir;
}

ssize_t kjit_watch_readlink(const char* path, char* buffer, size_t size)
{
  const ssize_t result = ::readlink(path, buffer, size);
  note(path, result >= 0, false, false, errno);
  return result;
}

char* kjit_watch_realpath(const char* path, char* resolved)
{
  char* result = ::realpath(path, resolved);
  note(path, result != nullptr, false, false, errno);
  return result;
}

int kjit_watch_statfs(const char* path, struct statfs* buffer)
{
  const int result = ::statfs(path, buffer);
  note(path, result == 0, true, false, errno);
  return result;
}

int kjit_watch_mkdir(const char* path, mode_t mode)
{
  const int result = ::mkdir(path, mode);
  note(path, result == 0, true, true, errno);
  return result;
}

int kjit_watch_rmdir(const char* path)
{
  const int result = ::rmdir(path);
  note(path, result == 0, true, true, errno);
  return result;
}

int kjit_watch_unlink(const char* path)
{
  const int result = ::unlink(path);
  note(path, result == 0, false, true, errno);
  return result;
}

int kjit_watch_remove(const char* path)
{
  const int result = std::remove(path);
  note(path, result == 0, false, true, errno);
  return result;
}

int kjit_watch_chdir(const char* path)
{
  note_blind("NVRTC changed the working directory");
  return ::chdir(path);
}

int kjit_watch_execv(const char* path, char* const argv[])
{
  note_blind("NVRTC started a program");
  return ::execv(path, argv);
}

int kjit_watch_execve(const char* path, char* const argv[], char* const envp[])
{
  note_blind("NVRTC started a program");
  return ::execve(path, argv, envp);
}

int kjit_watch_execvp(const char* file, char* const argv[])
{
  note_blind("NVRTC started a program");
  return ::execvp(file, argv);
}

int kjit_watch_system(const char* command)
{
  note_blind("NVRTC started a program");
  return std::system(command);
}

long kjit_watch_syscall(long number, long a, long b, long c, long d, long e, long f)
{
  if (names_a_file(number)) {
    note_blind("NVRTC made a system call on a file directly");
  }
  return ::syscall(number, a, b, c, d, e, f);
}

} // extern "C"

bool install()
{
  const NvrtcApi& api = nvrtc();
  const std::vector<util::ImportHook> hooks = {
    {"open", reinterpret_cast<void*>(&kjit_watch_open)},
    {"open64", reinterpret_cast<void*>(&kjit_watch_open)},
    {"fopen", reinterpret_cast<void*>(&kjit_watch_fopen)},
    {"fopen64", reinterpret_cast<void*>(&kjit_watch_fopen64)},
    {"__xstat", reinterpret_cast<void*>(&kjit_watch_xstat)},
    {"__xstat64", reinterpret_cast<void*>(&kjit_watch_xstat)},
    {"__lxstat", reinterpret_cast<void*>(&kjit_watch_lxstat)},
    {"__lxstat64", reinterpret_cast<void*>(&kjit_watch_lxstat)},
    {"stat", reinterpret_cast<void*>(&kjit_watch_stat)},
    {"stat64", reinterpret_cast<void*>(&kjit_watch_stat)},
    {"lstat", reinterpret_cast<void*>(&kjit_watch_lstat)},
    {"lstat64", reinterpret_cast<void*>(&kjit_watch_lstat)},
    {"access", reinterpret_cast<void*>(&kjit_watch_access)},
    {"opendir", reinterpret_cast<void*>(&kjit_watch_opendir)},
    {"readlink", reinterpret_cast<void*>(&kjit_watch_readlink)},
    {"realpath", reinterpret_cast<void*>(&kjit_watch_realpath)},
    {"statfs", reinterpret_cast<void*>(&kjit_watch_statfs)},
    {"mkdir", reinterpret_cast<void*>(&kjit_watch_mkdir)},
    {"rmdir", reinterpret_cast<void*>(&kjit_watch_rmdir)},
    {"unlink", reinterpret_cast<void*>(&kjit_watch_unlink)},
    {"remove", reinterpret_cast<void*>(&kjit_watch_remove)},
    {"chdir", reinterpret_cast<void*>(&kjit_watch_chdir)},
    {"execv", reinterpret_cast<void*>(&kjit_watch_execv)},
    {"execve", reinterpret_cast<void*>(&kjit_watch_execve)},
    {"execvp", reinterpret_cast<void*>(&kjit_watch_execvp)},
    {"system", reinterpret_cast<void*>(&kjit_watch_system)},
    {"syscall", reinterpret_cast<void*>(&kjit_watch_syscall)},
  };
  const std::set<std::string> hooked = util::hook_imports(reinterpret_cast<const void*>(api.compile_program), hooks);
  // What NVRTC finds headers with: without these, a watch would see nothing and say so falsely.
  const bool opens = hooked.count("open") + hooked.count("open64") + hooked.count("fopen") + hooked.count("fopen64") > 0;
  const bool stats = hooked.count("__xstat") + hooked.count("stat") + hooked.count("__xstat64") + hooked.count("stat64") > 0;
  return opens && stats;
}

} // namespace

bool FileWatch::available()
{
  if (!nvrtc_is_loaded()) {
    return false;
  }
  static const bool installed = install();
  return installed;
}

std::unique_ptr<FileWatch> FileWatch::claim()
{
  std::lock_guard lock(g_mutex);
  if (g_taken) {
    return nullptr;
  }
  g_taken = true;
  g_accesses.clear();
  g_blind.clear();
  return std::unique_ptr<FileWatch>(new FileWatch);
}

bool FileWatch::start()
{
  if (!available()) {
    return false;
  }
  t_watching = true;
  g_recording.store(true, std::memory_order_release);
  return true;
}

FileWatch::~FileWatch()
{
  g_recording.store(false, std::memory_order_release);
  t_watching = false;
  std::lock_guard lock(g_mutex);
  g_taken = false;
  g_accesses.clear();
}

std::string FileWatch::blind() const
{
  std::lock_guard lock(g_mutex);
  return g_blind;
}

std::vector<FileAccess> FileWatch::accesses() const
{
  std::lock_guard lock(g_mutex);
  return g_accesses;
}

} // namespace kjit::rtc
