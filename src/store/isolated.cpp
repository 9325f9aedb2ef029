// fork + setrlimit + bounded waitpid: a damaged store may crash or hang the child, never the host.
#include "store/isolated.hpp"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sys/resource.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace kjit::store {

namespace {

// The process's current virtual size in bytes (from /proc/self/statm), 0 if unknown.
std::size_t virtual_size()
{
  std::ifstream statm("/proc/self/statm");
  std::size_t pages = 0;
  statm >> pages;
  return pages * static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
}

} // namespace

IsolatedOutcome run_isolated(const std::function<int()>& body, const IsolatedLimits& limits, std::string& detail)
{
  const std::size_t address_space = virtual_size() + limits.extra_address_space;
  const pid_t child = ::fork();
  if (child < 0) {
    detail = std::string("fork: ") + std::strerror(errno);
    return IsolatedOutcome::no_child;
  }
  if (child == 0) {
    struct rlimit limit {};
    if (::getrlimit(RLIMIT_AS, &limit) == 0 && (limit.rlim_cur == RLIM_INFINITY || limit.rlim_cur > address_space)) {
      limit.rlim_cur = address_space;
      std::ignore = ::setrlimit(RLIMIT_AS, &limit);
    }
    ::signal(SIGPIPE, SIG_IGN);
    int code = 1;
    try {
      code = body();
    } catch (...) {
      code = 1;
    }
    ::_exit(code == 0 ? 0 : 1);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(limits.seconds);
  auto nap = std::chrono::microseconds(200);
  int status = 0;
  for (;;) {
    const pid_t done = ::waitpid(child, &status, WNOHANG);
    if (done == child) {
      break;
    }
    if (done < 0 && errno != EINTR) {
      detail = std::string("waitpid: ") + std::strerror(errno);
      return IsolatedOutcome::failed;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      ::kill(child, SIGKILL);
      while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
      }
      detail = "still running after " + std::to_string(limits.seconds) + " s: killed";
      return IsolatedOutcome::timed_out;
    }
    std::this_thread::sleep_for(nap);
    nap = std::min(nap * 2, std::chrono::microseconds(20000));
  }
  if (WIFSIGNALED(status)) {
    detail = std::string("killed by signal ") + ::strsignal(WTERMSIG(status));
    return IsolatedOutcome::crashed;
  }
  if (WEXITSTATUS(status) != 0) {
    detail = "the check failed";
    return IsolatedOutcome::failed;
  }
  return IsolatedOutcome::ok;
}

} // namespace kjit::store
