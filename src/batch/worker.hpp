// One compile worker process (started with posix_spawn, talking over a socket pair) and the
// worker's own loop.
#pragma once

#include <kjit/arch.hpp>
#include <kjit/binary.hpp>
#include <kjit/error.hpp>
#include <kjit/program.hpp>

#include "cache/cache_dir.hpp"

#include <cstdint>
#include <memory>

#include <string>
#include <sys/types.h>

namespace kjit::batch {

// Thrown when a worker died, hung past its time limit or broke the protocol; the worker is gone.
struct WorkerLost : Error {
  using Error::Error;
};

// Thrown when the program started as a worker answers the hello otherwise (another kjit's worker,
// not a worker at all): the batch compiles in-process instead.
struct WorkerMismatch : Error {
  using Error::Error;
};

class Worker {
public:
  // Starts `path` with stdin and stdout on a socket, TMPDIR set to a private folder (removed when
  // the worker ends) and the variables NVRTC reads when it loads set as `compiler_environment`
  // says (the asking Cache's key context's lines, "NAME=value\n"; those it does not name unset),
  // not as the process's environment holds them now; throws Error if it can't be started.
  Worker(const std::string& path, const std::string& compiler_environment);
  // Closes the socket and reaps the process (killing it if it still runs). Never throws.
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // Compiles in the worker (the first call checks the protocol's hello). Throws what compile()
  // threw there (same type), WorkerLost (the process is then killed and reaped) when it crashed,
  // hung longer than `timeout_s` or broke the protocol, or WorkerMismatch when it is not a worker
  // of this kjit.
  Binary compile(const Program& program, const Arch& arch, const std::string& cuda_home, double timeout_s,
                bool pch = false);

private:
  void start(const std::string& path, const std::string& compiler_environment);
  // Sends one frame and returns the answer; WorkerLost as compile().
  std::string exchange(const std::string& request, const std::string& what, double timeout_s);
  // Waits (briefly) for a worker that closed its end to have exited, without reaping it.
  void await_exit() const;
  [[noreturn]] void lose(const std::string& why);
  void stop() noexcept;
  pid_t m_pid = -1;
  int m_socket = -1;
  std::unique_ptr<cache::TempFolder> m_tmp;  // the worker's TMPDIR
  std::string m_path;
  bool m_greeted = false;
  std::uint32_t m_sequence = 0;  // of the last request sent
};

// What NVRTC's automatic PCH made for `program` holds besides its source: the arch, the options,
// the in-memory headers. The batch groups items by it; a worker keeps a PCH folder per value.
std::string pch_group(const Program& program, const std::string& arch);

// The worker's loop: reads requests from `in`, compiles each with rtc::compile, writes results to
// `out`, until end of input. Returns the process exit code.
int worker_main(int in, int out);

} // namespace kjit::batch
