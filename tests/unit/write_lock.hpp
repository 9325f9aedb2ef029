// Other processes holding a store's locks (LMDB's write lock, or lock.mdb during a first open),
// and waiting for a child: for the tests of commits, stores and fork() around them.
#pragma once

#include <kjit/config.hpp>

#include <boost/test/unit_test.hpp>

#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <lmdb.h>
#include <poll.h>
#include <string>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <tuple>
#include <unistd.h>

namespace kjit::test {

// Another process that takes hold of something (`take` returns whether it could), says so, and
// keeps it until release(), its end, or `hold_s` seconds. The test fails at once if it could not.
class HoldingProcess {
public:
  template <typename Take>
  HoldingProcess(Take take, int hold_s)
  {
    BOOST_TEST_REQUIRE(::pipe(m_ready) == 0);
    BOOST_TEST_REQUIRE(::pipe(m_release) == 0);
    m_pid = ::fork();
    BOOST_TEST_REQUIRE(m_pid >= 0);
    if (m_pid == 0) {
      std::ignore = ::write(m_ready[1], take() ? "h" : "x", 1);
      pollfd wait{m_release[0], POLLIN, 0};
      std::ignore = ::poll(&wait, 1, hold_s * 1000);
      ::_exit(0);  // what it holds goes with the process
    }
    char byte = 0;
    BOOST_TEST_REQUIRE(::read(m_ready[0], &byte, 1) == 1);
    BOOST_TEST_REQUIRE(byte == 'h');
  }
  HoldingProcess(const HoldingProcess&) = delete;
  HoldingProcess& operator=(const HoldingProcess&) = delete;
  ~HoldingProcess()
  {
    release();
    for (int fd : {m_ready[0], m_ready[1], m_release[0], m_release[1]}) {
      ::close(fd);
    }
  }
  // Whether the holder still holds it (has not ended).
  bool holding() const { return m_pid > 0 && ::waitpid(m_pid, nullptr, WNOHANG) == 0; }
  void release()
  {
    if (m_pid > 0) {
      std::ignore = ::write(m_release[1], "r", 1);
      ::waitpid(m_pid, nullptr, 0);
      m_pid = -1;
    }
  }

private:
  int m_ready[2] = {-1, -1};
  int m_release[2] = {-1, -1};
  pid_t m_pid = -1;
};

// Another process holding LMDB's write lock on the store in `store_dir` (as a process in the
// middle of a long commit would) until release() or `hold_s` seconds.
class WriteLockHolder : public HoldingProcess {
public:
  WriteLockHolder(const std::string& store_dir, std::size_t map_size, int hold_s)
    : HoldingProcess(
        [&] {
          MDB_env* env = nullptr;
          MDB_txn* txn = nullptr;
          return mdb_env_create(&env) == MDB_SUCCESS && mdb_env_set_maxdbs(env, 16) == MDB_SUCCESS &&
                 mdb_env_set_mapsize(env, map_size) == MDB_SUCCESS &&
                 mdb_env_open(env, store_dir.c_str(), MDB_NOTLS, 0600) == MDB_SUCCESS &&
                 mdb_txn_begin(env, nullptr, 0, &txn) == MDB_SUCCESS;
        },
        hold_s)
  {
  }
  // The store of the cache `config` names.
  WriteLockHolder(const kjit::Config& config, int hold_s)
    : WriteLockHolder(config.cache_dir + "/store", config.store_map_size, hold_s)
  {
  }
};

// The inode of lock.mdb in `store_dir` (made if missing).
inline ino_t made_lock_file(const std::string& store_dir)
{
  const int made = ::open((store_dir + "/lock.mdb").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  struct stat file {};
  BOOST_TEST_REQUIRE((made >= 0 && ::fstat(made, &file) == 0));
  ::close(made);
  return file.st_ino;
}

// Another process holding lock.mdb's first byte in `store_dir` (an fcntl lock, as a process in the
// middle of LMDB's first open holds it; lock.mdb is made if missing): an open of that store waits
// until release(), the holder's end, or 60 s. inode() is lock.mdb's, for lock_request_waits().
class FirstOpenHolder : public HoldingProcess {
public:
  explicit FirstOpenHolder(const std::string& store_dir)
    : HoldingProcess(
        [path = store_dir + "/lock.mdb"] {
          const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
          struct flock lock {};
          lock.l_type = F_WRLCK;
          lock.l_whence = SEEK_SET;
          lock.l_len = 1;
          return fd >= 0 && ::fcntl(fd, F_SETLK, &lock) == 0;
        },
        60),
      m_inode(made_lock_file(store_dir))
  {
  }
  ino_t inode() const { return m_inode; }

private:
  ino_t m_inode = 0;
};

// The wait status of `child`, once it has ended.
inline int wait_status(pid_t child)
{
  int status = 0;
  ::waitpid(child, &status, 0);
  return status;
}

// A wait status in words, for a failed check ("exit 2", "killed by File size limit exceeded").
inline std::string status_text(int status)
{
  return WIFSIGNALED(status) ? "killed by " + std::string(::strsignal(WTERMSIG(status)))
                             : "exit " + std::to_string(WEXITSTATUS(status));
}

// Whether a process waits for a lock on the file with inode `inode` (a blocked request, "->", in
// /proc/locks): how a test knows another thread or process is blocked in LMDB's lock.mdb.
inline bool lock_request_waits(ino_t inode)
{
  std::string locks;
  if (std::FILE* file = std::fopen("/proc/locks", "r")) {
    char buffer[4096];
    for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, file)) > 0;) {
      locks.append(buffer, n);
    }
    std::fclose(file);
  }
  const std::string name = ":" + std::to_string(inode) + " ";
  for (std::size_t at = 0; (at = locks.find("-> ", at)) != std::string::npos;) {
    const std::size_t end = locks.find('\n', at);
    if (locks.substr(at, end - at).find(name) != std::string::npos) {
      return true;
    }
    at = end;
  }
  return false;
}

} // namespace kjit::test
