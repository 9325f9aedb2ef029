// One move-only owner for every C handle kjit holds (nvrtcProgram, nvJitLinkHandle, MDB_env, fds…).
#pragma once

#include <utility>

namespace kjit::util {

// Owns a handle of type T and releases it with Deleter(handle) unless it equals Null.
// The deleter must not throw; its result, if any, is ignored on purpose (destructors never throw).
template <typename T, auto Deleter, T Null = T{}>
class UniqueHandle {
public:
  UniqueHandle() noexcept = default;
  explicit UniqueHandle(T handle) noexcept : m_handle(handle) {}
  UniqueHandle(UniqueHandle&& other) noexcept : m_handle(std::exchange(other.m_handle, Null)) {}
  UniqueHandle& operator=(UniqueHandle&& other) noexcept
  {
    if (this != &other) {
      reset();
      m_handle = std::exchange(other.m_handle, Null);
    }
    return *this;
  }
  UniqueHandle(const UniqueHandle&) = delete;
  UniqueHandle& operator=(const UniqueHandle&) = delete;
  ~UniqueHandle() { reset(); }

  T get() const noexcept { return m_handle; }
  T* out() noexcept { reset(); return &m_handle; }
  T release() noexcept { return std::exchange(m_handle, Null); }
  explicit operator bool() const noexcept { return m_handle != Null; }

  void reset() noexcept
  {
    if (m_handle != Null) {
      (void)Deleter(m_handle);
      m_handle = Null;
    }
  }

private:
  T m_handle = Null;
};

namespace detail {
int close_fd(int fd) noexcept;
}

using UniqueFd = UniqueHandle<int, detail::close_fd, -1>;

} // namespace kjit::util
