// The replaceable log sink.
#include "config/log.hpp"
#include "util/file_size_signal.hpp"

#include <kjit/config.hpp>

#include <cstdio>
#include <cxxabi.h>
#include <memory>
#include <mutex>
#include <set>
#include <string>

namespace kjit {

namespace {

// Calls of the sink, one at a time, and its replacement. Recursive: a sink may replace itself or
// call kjit functions that log, on its own thread.
std::recursive_mutex& sink_mutex()
{
  static std::recursive_mutex mutex;
  return mutex;
}

std::shared_ptr<const LogSink>& sink()
{
  static std::shared_ptr<const LogSink> instance;
  return instance;
}

void to_stderr(std::string_view text)
{
  // stderr may be a file under ulimit -f (a host's log): past the limit, the line is lost, not the host.
  const util::FileSizeSignalBlock no_sigxfsz;
  std::fprintf(stderr, "kjit: %.*s\n", static_cast<int>(text.size()), text.data());
  std::fflush(stderr);
}

} // namespace

void set_log_sink(LogSink new_sink)
{
  // Waits for a call of the old sink on another thread: once this returns, the old sink is not
  // called again (it may own what it writes to).
  std::lock_guard lock(sink_mutex());
  sink() = new_sink ? std::make_shared<const LogSink>(std::move(new_sink)) : nullptr;
}

namespace log {

void line(std::string_view text)
{
  std::lock_guard lock(sink_mutex());
  // Held for the call: a sink that replaces itself keeps running.
  const std::shared_ptr<const LogSink> current = sink();
  if (current) {
    // Lines come from kjit's own threads and destructors too, where an exception would end the
    // host (std::terminate): a line the sink refuses goes to stderr.
    try {
      (*current)(text);
      return;
    } catch (abi::__forced_unwind&) {
      throw;  // pthread_cancel() acting in the sink: the thread's cancellation goes on as before
    } catch (...) {
    }
  }
  to_stderr(text);
}

void warn_once(const std::string& message)
{
  static std::mutex mutex;
  static std::set<std::string> said;
  std::lock_guard lock(mutex);
  if (said.insert(message).second) {
    line("warning: " + message);
  }
}

} // namespace log

} // namespace kjit
