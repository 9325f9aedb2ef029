// Shared logic for loading a toolchain library once: dlopen by absolute path, bind symbols, time it.
#pragma once

#include "util/dynamic_library.hpp"

#include <kjit/error.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace kjit::rtc {

// Collects the symbols that could not be bound so the error names all of them at once.
class SymbolBinder {
public:
  explicit SymbolBinder(const util::DynamicLibrary& library) : m_library(library) {}

  template <typename Fn>
  SymbolBinder& operator()(Fn*& out, const char* name)
  {
    if (!m_library.bind(out, name)) {
      m_missing.push_back(name);
    }
    return *this;
  }

  // Throws ToolchainError naming the library and the missing symbols, if any.
  void check(const char* what) const;

private:
  const util::DynamicLibrary& m_library;
  std::vector<std::string> m_missing;
};

// dlopen(`path`) or throw ToolchainError saying what was being loaded and how to point kjit at it.
util::DynamicLibrary open_toolchain_library(const std::string& path, const char* what, int flags = 0);

// Milliseconds this process spent loading toolchain libraries that no compile has reported yet.
// The next compile takes them for its load column, whichever call loaded them (a key's toolchain
// probe loads NVRTC before the compile: its load column said 0.0 ms). Thread-safe.
void add_unreported_load_ms(double ms);
double take_unreported_load_ms();

// A value built once per process on first use and kept until exit (libraries stay loaded); the
// time building took is added to the unreported load time. If building throws, the next call
// tries again.
template <typename T>
class LoadOnce {
public:
  template <typename Build>
  const T& get(Build&& build)
  {
    if (const T* value = m_value.load(std::memory_order_acquire)) {
      return *value;
    }
    std::lock_guard lock(m_mutex);
    if (m_value.load(std::memory_order_relaxed) == nullptr) {
      const auto start = std::chrono::steady_clock::now();
      m_value.store(std::unique_ptr<T>(build()).release(), std::memory_order_release);
      add_unreported_load_ms(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    }
    return *m_value.load(std::memory_order_relaxed);
  }
  // The value once built, else nullptr.
  const T* value() const noexcept { return m_value.load(std::memory_order_acquire); }
  bool loaded() const noexcept { return value() != nullptr; }

private:
  std::atomic<const T*> m_value{nullptr};
  std::mutex m_mutex;
};

} // namespace kjit::rtc
