// Elapsed wall time in milliseconds, for stage timings.
#pragma once

#include <chrono>

namespace kjit::util {

class Stopwatch {
public:
  Stopwatch() noexcept : m_start(std::chrono::steady_clock::now()) {}
  double elapsed_ms() const noexcept
  {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - m_start).count();
  }

private:
  std::chrono::steady_clock::time_point m_start;
};

} // namespace kjit::util
