// The replaceable log sink.
#include "config/log.hpp"

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
  std::fprintf(stderr, "kjit: %.*s\n", static_cast<int>(text.size()), text.data());
}

} // namespace log

} // namespace kjit
