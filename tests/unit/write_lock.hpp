// Another process holding LMDB's write lock on a store, and waiting for a child: for the tests of
// commits and of fork() around them.
#pragma once

#include <kjit/config.hpp>

#include <boost/test/unit_test.hpp>

#include <cstring>
#include <lmdb.h>
#include <poll.h>
#include <string>
#include <sys/wait.h>
#include <tuple>
#include <unistd.h>

namespace kjit::test {

// Another process holding LMDB's write lock on the store in `store_dir` (as a process in the
// middle of a long commit would) until release() or `hold_s` seconds.
class WriteLockHolder {
public:
  WriteLockHolder(const std::string& store_dir, std::size_t map_size, int hold_s)
  {
    BOOST_TEST_REQUIRE(::pipe(m_ready) == 0);
    BOOST_TEST_REQUIRE(::pipe(m_release) == 0);
    m_pid = ::fork();
    BOOST_TEST_REQUIRE(m_pid >= 0);
    if (m_pid == 0) {
      MDB_env* env = nullptr;
      MDB_txn* txn = nullptr;
      const bool held = mdb_env_create(&env) == MDB_SUCCESS && mdb_env_set_maxdbs(env, 16) == MDB_SUCCESS &&
                        mdb_env_set_mapsize(env, map_size) == MDB_SUCCESS &&
                        mdb_env_open(env, store_dir.c_str(), MDB_NOTLS, 0600) == MDB_SUCCESS &&
                        mdb_txn_begin(env, nullptr, 0, &txn) == MDB_SUCCESS;
      std::ignore = ::write(m_ready[1], held ? "h" : "x", 1);
      pollfd wait{m_release[0], POLLIN, 0};
      std::ignore = ::poll(&wait, 1, hold_s * 1000);
      ::_exit(0);  // the lock goes with the process
    }
    char byte = 0;
    BOOST_TEST_REQUIRE(::read(m_ready[0], &byte, 1) == 1);
    BOOST_TEST_REQUIRE(byte == 'h');
  }
  // The store of the cache `config` names.
  WriteLockHolder(const kjit::Config& config, int hold_s)
    : WriteLockHolder(config.cache_dir + "/store", config.store_map_size, hold_s)
  {
  }
  WriteLockHolder(const WriteLockHolder&) = delete;
  WriteLockHolder& operator=(const WriteLockHolder&) = delete;
  ~WriteLockHolder()
  {
    release();
    for (int fd : {m_ready[0], m_ready[1], m_release[0], m_release[1]}) {
      ::close(fd);
    }
  }
  // Whether the holder still holds the lock (has not ended).
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

} // namespace kjit::test
