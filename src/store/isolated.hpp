// Running a risky piece of work (reading or writing a store that may be damaged) in a child process.
#pragma once

#include <functional>
#include <string>

namespace kjit::store {

struct IsolatedLimits {
  double seconds = 20.0;                            // killed (SIGKILL) after this long
  std::size_t extra_address_space = 1ull << 30;     // RLIMIT_AS: the parent's size at fork plus this
};

enum class IsolatedOutcome {
  ok,         // `body` returned 0
  failed,     // `body` returned non-zero (a check failed, an LMDB error)
  crashed,    // killed by a signal (SIGBUS, SIGSEGV, an LMDB assertion's abort, out of memory)
  timed_out,  // still running after `seconds` (a loop in a damaged B-tree): killed
  no_child,   // fork() failed: nothing was run
};

// Forks; the child applies the limits, runs `body` and _exits with its result (also sent through a
// pipe: a host ignoring SIGCHLD gets no exit status) without running atexit handlers or
// destructors of the parent's objects. `body` must only use what it opens itself
// (never an LMDB environment of the parent). The parent waits up to `limits.seconds`.
// `detail` receives a description of a non-ok outcome. Never throws.
IsolatedOutcome run_isolated(const std::function<int()>& body, const IsolatedLimits& limits, std::string& detail);

} // namespace kjit::store
