// Shared logic for loading a toolchain library once: dlopen by absolute path, bind symbols, time it.
#pragma once

#include "util/dynamic_library.hpp"

#include <kjit/error.hpp>

#include <atomic>
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

// A value built once per process on first use and kept until exit (libraries stay loaded).
// If building throws, the next call tries again.
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
      m_value.store(std::unique_ptr<T>(build()).release(), std::memory_order_release);
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
