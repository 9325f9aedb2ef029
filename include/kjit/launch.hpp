// Launch geometry and kernel arguments packed into the void*[] the driver wants.
#pragma once

#include <cstddef>
#include <cstring>
#include <memory>
#include <type_traits>
#include <vector>

namespace kjit {

struct Dim3 {
  unsigned x = 1;
  unsigned y = 1;
  unsigned z = 1;
  Dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};

struct LaunchConfig {
  Dim3 grid;
  Dim3 block;
  unsigned shared_bytes = 0;  // dynamic shared memory
  void* stream = nullptr;     // a CUstream; nullptr = the context's default stream
  // Thread-block cluster in blocks (sm_90 and newer): 1x1x1 is no cluster; each grid dimension must
  // be a multiple of the cluster's. Launched with cuLaunchKernelEx.
  Dim3 cluster = Dim3(1, 1, 1);
  // A cooperative launch (grid-wide synchronisation with cooperative groups): every block must be
  // resident at once (see Kernel::max_cooperative_grid). Launched with cuLaunchKernelEx.
  bool cooperative = false;
};

// Copies of the kernel arguments, each aligned as its type requires, and the array of pointers to
// them that cuLaunchKernel takes. Arguments must be trivially copyable (as CUDA requires).
class ArgumentPack {
public:
  template <typename... Args>
  explicit ArgumentPack(const Args&... args)
  {
    static_assert((std::is_trivially_copyable<Args>::value && ...), "kernel arguments must be trivially copyable");
    std::size_t size = 0;
    ((size = align_up(size, alignof(Args)) + sizeof(Args)), ...);
    m_storage.reset(new std::max_align_t[(size + sizeof(std::max_align_t) - 1) / sizeof(std::max_align_t) + 1]);
    [[maybe_unused]] std::size_t offset = 0;  // unused when the kernel takes no arguments
    (append(args, offset), ...);
    m_pointers.push_back(nullptr);
  }

  // The void* array for cuLaunchKernel (one entry per argument, then nullptr).
  void** data() noexcept { return m_pointers.data(); }
  std::size_t size() const noexcept { return m_pointers.size() - 1; }
  // sizeof of each argument, in order.
  const std::size_t* sizes() const noexcept { return m_sizes.data(); }

private:
  static std::size_t align_up(std::size_t value, std::size_t alignment)
  {
    return (value + alignment - 1) / alignment * alignment;
  }

  template <typename T>
  void append(const T& value, std::size_t& offset)
  {
    offset = align_up(offset, alignof(T));
    char* at = reinterpret_cast<char*>(m_storage.get()) + offset;
    std::memcpy(at, &value, sizeof(T));
    m_pointers.push_back(at);
    m_sizes.push_back(sizeof(T));
    offset += sizeof(T);
  }

  std::unique_ptr<std::max_align_t[]> m_storage;
  std::vector<void*> m_pointers;
  std::vector<std::size_t> m_sizes;
};

} // namespace kjit
