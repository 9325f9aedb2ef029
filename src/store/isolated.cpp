// fork + setrlimit + bounded waitpid: a damaged store may crash or hang the child, never the host.
#include "store/isolated.hpp"

#include "store/address_space.hpp"
#include "util/unique_handle.hpp"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <tuple>
#include <unistd.h>

namespace kjit::store {


IsolatedOutcome run_isolated(const std::function<int()>& body, const IsolatedLimits& limits, std::string& detail)
{
  const std::size_t address_space = virtual_size() + limits.extra_address_space;
  // The child's result comes through a pipe, not only its exit status: a host that ignores
  // SIGCHLD has its children reaped by the kernel, and waitpid() then says ECHILD. End of file
  // without a result byte is a child that died; the pipe open means it is still running (so the
  // pid killed on a timeout is still the child's).
  int result_pipe[2];
  if (::pipe2(result_pipe, O_CLOEXEC) != 0) {
    detail = std::string("pipe: ") + std::strerror(errno);
    return IsolatedOutcome::no_child;
  }
  util::UniqueFd result_read(result_pipe[0]);
  util::UniqueFd result_write(result_pipe[1]);
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
    const char result = code == 0 ? '0' : '1';
    std::ignore = ::write(result_write.get(), &result, 1);
    ::_exit(code == 0 ? 0 : 1);
  }
  result_write.reset();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(limits.seconds);
  char result = 0;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd wait{result_read.get(), POLLIN, 0};
    const int ready = left.count() > 0 ? ::poll(&wait, 1, static_cast<int>(std::min<long long>(left.count(), 60000))) : 0;
    if (ready < 0 && errno == EINTR) {
      continue;
    }
    if (ready == 0 && std::chrono::steady_clock::now() < deadline) {
      continue;
    }
    if (ready <= 0) {
      ::kill(child, SIGKILL);  // (still running: it holds the pipe)
      while (::waitpid(child, nullptr, 0) < 0 && errno == EINTR) {
      }
      detail = "still running after " + std::to_string(limits.seconds) + " s: killed";
      return IsolatedOutcome::timed_out;
    }
    const ssize_t got = ::read(result_read.get(), &result, 1);
    if (got < 0 && errno == EINTR) {
      continue;
    }
    if (got <= 0) {
      result = 0;  // ended without a result
    }
    break;
  }
  int status = 0;
  pid_t reaped = -1;
  while ((reaped = ::waitpid(child, &status, 0)) < 0 && errno == EINTR) {
  }
  if (reaped == child && WIFSIGNALED(status)) {
    detail = std::string("killed by signal ") + ::strsignal(WTERMSIG(status));
    return IsolatedOutcome::crashed;
  }
  if (result == 0) {
    detail = reaped == child ? "ended without a result" : "ended without a result (killed by a signal)";
    return IsolatedOutcome::crashed;
  }
  if (result != '0') {
    detail = "the check failed";
    return IsolatedOutcome::failed;
  }
  return IsolatedOutcome::ok;
}

} // namespace kjit::store
