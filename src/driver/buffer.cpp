// DeviceBuffer and synchronize(): the little memory management the demo and tests need.
#include "driver/module_state.hpp"

#include <kjit/error.hpp>

#include <tuple>

namespace kjit {

DeviceBuffer::DeviceBuffer(const Context& context, std::size_t bytes) : m_context(context), m_size(bytes)
{
  if (bytes == 0) {
    return;  // cuMemAlloc refuses 0 bytes: an empty buffer holds no memory (pointer 0)
  }
  const driver::DriverApi& api = driver::require_driver();
  const driver::ScopedContext scope(m_context.m_state->context);
  CUdeviceptr pointer = 0;
  driver::check(api.mem_alloc(&pointer, bytes), [&] { return "cuMemAlloc(" + std::to_string(bytes) + ")"; });
  m_pointer = pointer;
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
  : m_context(other.m_context), m_pointer(std::exchange(other.m_pointer, 0)), m_size(std::exchange(other.m_size, 0))
{
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept
{
  if (this != &other) {
    std::swap(m_context, other.m_context);
    std::swap(m_pointer, other.m_pointer);
    std::swap(m_size, other.m_size);
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer()
{
  const driver::DriverApi* api = driver::cleanup_api();
  if (m_pointer != 0 && api != nullptr) {
    const driver::ScopedContext scope(m_context.m_state->context, driver::ScopedContext::OnFailure::ignore);
    // Not current: the context is gone and its memory with it (the address may be another
    // allocation's now), or the driver shut down.
    if (scope.active() && driver::cleanup_api() != nullptr) {
      std::ignore = driver::note_cleanup(api->mem_free(m_pointer));
    }
  }
}

void DeviceBuffer::upload(const void* data, std::size_t bytes)
{
  if (bytes > m_size) {
    throw Error("upload of " + std::to_string(bytes) + " bytes into a " + std::to_string(m_size) + "-byte buffer");
  }
  if (bytes == 0) {
    return;
  }
  const driver::ScopedContext scope(m_context.m_state->context);
  driver::check(driver::require_driver().memcpy_htod(m_pointer, data, bytes), [] { return std::string("cuMemcpyHtoD"); });
}

void DeviceBuffer::download(void* data, std::size_t bytes) const
{
  if (bytes > m_size) {
    throw Error("download of " + std::to_string(bytes) + " bytes from a " + std::to_string(m_size) + "-byte buffer");
  }
  if (bytes == 0) {
    return;
  }
  const driver::ScopedContext scope(m_context.m_state->context);
  driver::check(driver::require_driver().memcpy_dtoh(data, m_pointer, bytes), [] { return std::string("cuMemcpyDtoH"); });
}

void synchronize(const Context& context)
{
  driver::check(driver::require_driver().ctx_synchronize(static_cast<CUcontext>(context.handle())),
                [&] { return "cuCtxSynchronize on device " + std::to_string(context.device()); });
}

} // namespace kjit
