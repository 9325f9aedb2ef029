// One compile worker process (started with posix_spawn, talking over a socket pair) and the
// worker's own loop.
#pragma once

#include <kjit/arch.hpp>
#include <kjit/binary.hpp>
#include <kjit/error.hpp>
#include <kjit/program.hpp>

#include <string>
#include <sys/types.h>

namespace kjit::batch {

// Thrown when a worker died, hung past its time limit or broke the protocol; the worker is gone.
struct WorkerLost : Error {
  using Error::Error;
};

class Worker {
public:
  // Starts `path` with stdin and stdout on a socket; throws Error if it can't be started.
  explicit Worker(const std::string& path);
  // Closes the socket and reaps the process (killing it if it still runs). Never throws.
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // Compiles in the worker. Throws what compile() threw there (same type), or WorkerLost (the
  // process is then killed and reaped) when it crashed, hung longer than `timeout_s` or broke
  // the protocol.
  Binary compile(const Program& program, const Arch& arch, const std::string& cuda_home, double timeout_s,
                bool pch = false);

private:
  [[noreturn]] void lose(const std::string& why);
  void stop() noexcept;
  pid_t m_pid = -1;
  int m_socket = -1;
};

// The worker's loop: reads requests from `in`, compiles each with rtc::compile, writes results to
// `out`, until end of input. Returns the process exit code.
int worker_main(int in, int out);

} // namespace kjit::batch
