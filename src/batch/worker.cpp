// Worker processes: spawn, request/response with a time limit, kill and reap; the worker loop.
#include "batch/worker.hpp"

#include "batch/protocol.hpp"
#include "cache/cache_dir.hpp"
#include "config/config_internal.hpp"
#include "rtc/compiler.hpp"
#include "rtc/nvrtc_library.hpp"
#include "util/hash.hpp"
#include "util/no_cancellation.hpp"

#include <kjit/config.hpp>
#include <kjit/error.hpp>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <spawn.h>
#include <tuple>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace kjit::batch {

namespace {

// How long a program started as a worker has to answer the hello: starting is quick (the toolkit is
// loaded later), and a program that is not a worker must not hold the batch for the item timeout.
constexpr double k_hello_timeout_s = 5;

std::string describe_status(int status)
{
  if (WIFSIGNALED(status)) {
    return "killed by signal " + std::to_string(WTERMSIG(status)) + " (" + ::strsignal(WTERMSIG(status)) + ")";
  }
  if (WIFEXITED(status)) {
    return "exited with status " + std::to_string(WEXITSTATUS(status));
  }
  return "stopped";
}

// NVRTC's notes about creating or using a PCH file are not the program's messages.
std::string without_pch_lines(const std::string& log)
{
  std::string out;
  std::size_t start = 0;
  bool dropped = false;
  while (start < log.size()) {
    std::size_t end = log.find('\n', start);
    end = end == std::string::npos ? log.size() : end;
    const std::string line = log.substr(start, end - start);
    // A PCH warning, and the remark NVRTC prints after it, are this worker's business.
    const bool pch_line = line.find("precompiled header") != std::string::npos;
    const bool its_remark = dropped && line.rfind("Remark: The warnings can be suppressed", 0) == 0;
    if (!pch_line && !its_remark && !line.empty()) {
      out += (out.empty() ? "" : "\n") + line;
    }
    dropped = pch_line;
    start = end + 1;
  }
  return out;
}

// Waits for `pid` to end and reaps it; a signal to the waiting thread does not end the wait (it
// would leave a zombie for the life of the process). Its status, or 0.
int reap(pid_t pid)
{
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

// The environment for a worker: ours, with TMPDIR set to its private folder and the compiler's
// variables as `compiler_environment` names them. NVRTC reads those when the worker loads it: a
// setenv() of the host since its Cache made its keys would compile other code than the keys name.
std::vector<std::string> worker_environment(const std::string& tmpdir, const std::string& compiler_environment)
{
  const auto replaced = [](const char* entry) {
    if (std::strncmp(entry, "TMPDIR=", 7) == 0) {
      return true;
    }
    for (const char* variable : k_compiler_environment_variables) {
      const std::size_t length = std::strlen(variable);
      if (std::strncmp(entry, variable, length) == 0 && entry[length] == '=') {
        return true;
      }
    }
    return false;
  };
  std::vector<std::string> env;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    if (!replaced(*entry)) {
      env.emplace_back(*entry);
    }
  }
  for (std::size_t at = 0, end; at < compiler_environment.size(); at = end + 1) {
    end = std::min(compiler_environment.find('\n', at), compiler_environment.size());
    if (end > at) {
      env.push_back(compiler_environment.substr(at, end - at));
    }
  }
  env.push_back("TMPDIR=" + tmpdir);
  return env;
}

} // namespace

Worker::Worker(const std::string& path, const std::string& compiler_environment)
{
  // The worker's temporary files (NVRTC's automatic PCH folders, kjit's include copies) go to a
  // folder of its own, removed when it ends: a worker killed for its time limit leaves nothing.
  m_tmp = std::make_unique<cache::TempFolder>("kjit-worker-", "a folder for a compile worker");
  try {
    start(path, compiler_environment);
  } catch (...) {
    stop();
    throw;
  }
}

void Worker::start(const std::string& path, const std::string& compiler_environment)
{
  m_path = path;
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    throw Error(std::string("cannot create a worker socket: ") + std::strerror(errno));
  }
  // A process group of its own: killing the group also ends what a wrapper script started.
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attributes, 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 0);  // dup2 clears CLOEXEC on 0 and 1
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  char* argv[] = {const_cast<char*>(path.c_str()), nullptr};
  const std::vector<std::string> env = worker_environment(m_tmp->path(), compiler_environment);
  std::vector<char*> envp;
  for (const std::string& entry : env) {
    envp.push_back(const_cast<char*>(entry.c_str()));
  }
  envp.push_back(nullptr);
  const int error = ::posix_spawn(&m_pid, path.c_str(), &actions, &attributes, argv, envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  ::close(fds[1]);
  if (error != 0) {
    ::close(fds[0]);
    m_pid = -1;
    throw Error("cannot start the compile worker " + path + ": " + std::strerror(error));
  }
  m_socket = fds[0];
}

Worker::~Worker()
{
  stop();
}

void Worker::stop() noexcept
{
  // Called by destructors: a pending cancellation acting in its close() or waits would terminate.
  const util::NoCancellation no_cancellation;
  if (m_socket >= 0) {
    ::close(m_socket);  // a healthy worker sees end of input and exits
    m_socket = -1;
  }
  if (m_pid > 0) {
    int status = 0;
    for (int i = 0; i < 50 && ::waitpid(m_pid, &status, WNOHANG) == 0; ++i) {
      ::usleep(2000);
      if (i == 49) {
        ::kill(-m_pid, SIGKILL);
        std::ignore = reap(m_pid);
      }
    }
    // What the worker left running in its group (a wrapper's children): the group id is not reused
    // while any member lives.
    std::ignore = ::kill(-m_pid, SIGKILL);
    m_pid = -1;
  }
  m_tmp.reset();  // after the worker is gone: what it left in its TMPDIR goes too
}

void Worker::await_exit() const
{
  // A worker's end of the socket closes when it exits; its status follows at once on an idle
  // machine, but 1 ms was too short on a loaded one (a SIGSEGV reported as "no answer", CI under
  // a parallel build). Asked without reaping it (lose() does), for at most k_exit_wait_ms: one
  // that closed its socket and lives on is killed by lose().
  constexpr int k_exit_wait_ms = 500;
  for (int waited = 0; m_pid > 0 && waited < k_exit_wait_ms; ++waited) {
    siginfo_t info{};
    if (::waitid(P_PID, static_cast<id_t>(m_pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid == m_pid) {
      return;  // exited (or not ours to ask)
    }
    ::usleep(1000);
  }
}

void Worker::lose(const std::string& why)
{
  std::string detail = why;
  if (m_pid > 0) {
    int status = 0;
    if (::waitpid(m_pid, &status, WNOHANG) == m_pid) {
      detail += ": worker " + describe_status(status);
    } else {
      ::kill(-m_pid, SIGKILL);
      std::ignore = reap(m_pid);
    }
    std::ignore = ::kill(-m_pid, SIGKILL);  // the rest of its group
    m_pid = -1;
  }
  stop();
  throw WorkerLost(detail);
}

Binary Worker::compile(const Program& program, const Arch& arch, const std::string& cuda_home, double timeout_s,
                       bool pch)
{
  const std::string what = "compile worker for " + program.name + " (" + arch.str() + ")";
  if (m_socket < 0) {
    throw WorkerLost(what + ": worker not running");
  }
  if (!m_greeted) {
    // Both sides must read frames the same way: a kjit-worker of another kjit is not used. A program
    // that is no worker at all (exits, says nothing, answers unframed) is not one either.
    std::string answer;
    try {
      answer = exchange(hello(false), what, k_hello_timeout_s);  // the item's limit is for the compile, however short
    } catch (const WorkerLost& e) {
      throw WorkerMismatch(m_path + " is not a compile worker of this kjit (no answer to \"" + hello(false) +
                           "\": " + e.what() + ")");
    }
    if (answer != hello(true)) {
      std::string got = answer.substr(0, 40);
      for (char& c : got) {
        c = c >= ' ' && c < 127 ? c : '?';
      }
      stop();
      throw WorkerMismatch(m_path + " is not a compile worker of this kjit (it answered \"" + got + "\" to \"" +
                           hello(false) + "\")");
    }
    m_greeted = true;
  }
  const std::uint32_t sequence = ++m_sequence;
  std::string response = exchange(with_sequence(sequence, encode_request(program, arch, pch, cuda_home)), what, timeout_s);
  try {
    if (take_sequence(response) != sequence) {
      throw MalformedFrame("an answer to another request");
    }
    return decode_response(response);
  } catch (const MalformedFrame& e) {
    // What follows on the socket may be anything, even a stale answer to another item.
    lose(what + " broke the protocol (" + e.what() + ")");
  }
}

std::string Worker::exchange(const std::string& request, const std::string& what, double timeout_s)
{
  // One deadline for sending the request and reading the whole answer: a worker that stops
  // reading, or stops in the middle of a frame, is killed at it like one that says nothing.
  // <= 0 (or not a number, or beyond any real wait): none.
  const bool limited = timeout_s > 0 && timeout_s < 1e12;
  const std::int64_t deadline_ms = limited ? steady_ms() + static_cast<std::int64_t>(timeout_s * 1000.0) : k_no_deadline;
  const std::string limit = "timed out after " + std::to_string(timeout_s) + " s and was killed";
  bool timed_out = false;
  if (!write_frame(m_socket, request, deadline_ms, &timed_out)) {
    lose(what + (timed_out ? " " + limit : " stopped reading"));
  }
  auto response = read_frame(m_socket, deadline_ms, &timed_out);
  if (!response) {
    if (timed_out) {
      lose(what + " " + limit);
    }
    await_exit();  // its end closed: the exit status (a crash's signal) is due
    lose(what + " ended without an answer");
  }
  return std::move(*response);
}

std::string pch_group(const Program& program, const std::string& arch)
{
  std::string group = arch;
  for (const auto& option : program.options) {
    group += '\0' + option;
  }
  for (const auto& [name, content] : program.headers) {
    group += '\1' + name + '\2' + content;
  }
  return group;
}

namespace {

// "--pch-dir=F" for a folder of this worker's TMPDIR named by the program's pch_group(): NVRTC
// uses a PCH of the same folder as made, whatever the headers hold now. Empty (no PCH) where the
// program names PCH options of its own, or the folder can't be made.
std::string pch_folder_option(const Program& program, const std::string& arch)
{
  for (const auto& option : program.options) {
    if (option.find("pch") != std::string::npos) {
      return {};
    }
  }
  const char* tmpdir = std::getenv("TMPDIR");
  const std::string folder = std::string(tmpdir != nullptr && *tmpdir != '\0' ? tmpdir : "/tmp") + "/kjit-pch-" +
                             util::to_hex(util::checksum(pch_group(program, arch)));
  if (::mkdir(folder.c_str(), 0700) != 0 && errno != EEXIST) {
    return {};
  }
  return "--pch-dir=" + folder;
}

} // namespace

int worker_main(int in, int out)
{
  std::signal(SIGPIPE, SIG_IGN);
  const auto first = read_frame(in);
  if (!first || !write_frame(out, hello(true)) || *first != hello(false)) {
    return first ? 2 : 0;  // another protocol: our hello told the batch so
  }
  while (auto request = read_frame(in)) {
    std::string response;
    std::uint32_t sequence = 0;
    try {
      sequence = take_sequence(*request);
      Program program;
      std::string arch;
      bool pch = false;
      Config config;  // a compile reads only the toolkit: the asking Cache's, never this environment's settings
      decode_request(*request, program, arch, pch, config.cuda_home);
      const std::string pch_option = pch ? pch_folder_option(program, arch) : std::string();
      rtc::nvrtc_for(config);  // the asking Cache's toolkit (one per worker process, like any process)
      std::optional<Binary> binary;
      if (!pch_option.empty()) {
        // NVRTC's automatic PCH, kept for this process's next compile of the same options and
        // in-memory headers: in a folder of their own (see rtc::without_unfoldered_pch).
        Program with_pch = program;
        with_pch.options.push_back("-pch");
        with_pch.options.push_back(pch_option);
        try {
          binary = rtc::compile(config, with_pch, Arch::parse(arch));
          binary->log = without_pch_lines(binary->log);
        } catch (const Error&) {
          // Compiled again without it, and that answered: the PCH is only a speed-up, and what
          // fails with it may be the PCH's own (its file can't be written under a file size limit:
          // "unable to obtain mapped memory"), which the cache would remember as the program's
          // error. A program's own error is the same error an in-process compile gives.
        }
      }
      if (!binary) {
        binary = rtc::compile(config, program, Arch::parse(arch));
      }
      response = encode_binary(*binary);
    } catch (const std::exception& e) {
      response = encode_error(e);
    }
    if (!write_frame(out, with_sequence(sequence, response))) {
      return 1;
    }
  }
  return 0;
}

} // namespace kjit::batch
