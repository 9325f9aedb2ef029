// The replaceable log sink.
#include "config/log.hpp"
#include "util/file_size_signal.hpp"

#include <kjit/config.hpp>

#include <cstdio>
#include <mutex>
#include <string>

namespace kjit {

namespace {

std::mutex& sink_mutex()
{
  static std::mutex mutex;
  return mutex;
}

LogSink& sink()
{
  static LogSink instance;
  return instance;
}

} // namespace

void set_log_sink(LogSink new_sink)
{
  std::lock_guard lock(sink_mutex());
  sink() = std::move(new_sink);
}

namespace log {

void line(std::string_view text)
{
  std::lock_guard lock(sink_mutex());
  if (sink()) {
    sink()(text);
    return;
  }
  // stderr may be a file under ulimit -f (a host's log): past the limit, the line is lost, not the host.
  const util::FileSizeSignalBlock no_sigxfsz;
  std::fprintf(stderr, "kjit: %.*s\n", static_cast<int>(text.size()), text.data());
  std::fflush(stderr);
}

} // namespace log

} // namespace kjit
