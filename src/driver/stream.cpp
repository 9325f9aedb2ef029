// Stream and Event: cuStreamCreate/cuEventCreate objects that destroy their handle, in the
// context they were made in.
#include "driver/driver_api.hpp"

#include <kjit/error.hpp>
#include <kjit/stream.hpp>

#include <tuple>
#include <utility>

namespace kjit {

namespace {

CUcontext context_of(const Context& context)
{
  return static_cast<CUcontext>(context.handle());
}

std::string on_device(const Context& context)
{
  return " on device " + std::to_string(context.device());
}

// Destroys a handle of `context` with `destroy`, unless the process is exiting (the driver
// frees it with the context) or the context is gone.
template <typename Destroy>
void destroy_in(const Context& context, Destroy&& destroy)
{
  const driver::DriverApi* api = driver::cleanup_api();
  if (api == nullptr) {
    return;
  }
  const driver::ScopedContext scope(context_of(context), driver::ScopedContext::OnFailure::ignore);
  if (scope.active() && driver::cleanup_api() != nullptr) {
    std::ignore = driver::note_cleanup(destroy(*api));
  }
}

} // namespace

Stream::Stream(const Context& context) : m_context(context), m_owned(true)
{
  const driver::DriverApi& api = driver::require_driver();
  const driver::ScopedContext scope(context_of(m_context));
  CUstream stream = nullptr;
  driver::check(api.stream_create(&stream, CU_STREAM_NON_BLOCKING),
                [&] { return "cuStreamCreate" + on_device(m_context); });
  m_stream = stream;
}

Stream Stream::wrap(const Context& context, void* cu_stream)
{
  if (cu_stream == nullptr) {
    throw CudaError("Stream::wrap of a null CUstream (the default stream needs no Stream: launch with "
                    "LaunchConfig::stream = nullptr)",
                    CUDA_ERROR_INVALID_HANDLE);
  }
  return Stream(context, cu_stream, false);
}

Stream::Stream(Stream&& other) noexcept
  : m_context(other.m_context), m_stream(std::exchange(other.m_stream, nullptr)), m_owned(std::exchange(other.m_owned, false))
{
}

Stream& Stream::operator=(Stream&& other) noexcept
{
  if (this != &other) {
    Stream old(std::move(*this));  // this one's stream, destroyed at the end of the scope
    m_context = other.m_context;
    m_stream = std::exchange(other.m_stream, nullptr);
    m_owned = std::exchange(other.m_owned, false);
  }
  return *this;
}

Stream::~Stream()
{
  if (m_owned && m_stream != nullptr) {
    destroy_in(m_context, [this](const driver::DriverApi& api) { return api.stream_destroy(static_cast<CUstream>(m_stream)); });
  }
}

void Stream::synchronize() const
{
  if (m_stream == nullptr) {
    throw CudaError("synchronize of a moved-from Stream", CUDA_ERROR_INVALID_HANDLE);
  }
  const driver::ScopedContext scope(context_of(m_context));
  driver::check(driver::require_driver().stream_synchronize(static_cast<CUstream>(m_stream)),
                [&] { return "cuStreamSynchronize" + on_device(m_context); });
}

Event::Event(const Context& context) : m_context(context)
{
  const driver::DriverApi& api = driver::require_driver();
  const driver::ScopedContext scope(context_of(m_context));
  CUevent event = nullptr;
  driver::check(api.event_create(&event, CU_EVENT_DEFAULT), [&] { return "cuEventCreate" + on_device(m_context); });
  m_event = event;
}

Event::Event(Event&& other) noexcept : m_context(other.m_context), m_event(std::exchange(other.m_event, nullptr)) {}

Event& Event::operator=(Event&& other) noexcept
{
  if (this != &other) {
    Event old(std::move(*this));  // this one's event, destroyed at the end of the scope
    m_context = other.m_context;
    m_event = std::exchange(other.m_event, nullptr);
  }
  return *this;
}

Event::~Event()
{
  if (m_event != nullptr) {
    destroy_in(m_context, [this](const driver::DriverApi& api) { return api.event_destroy(static_cast<CUevent>(m_event)); });
  }
}

namespace {

void record_on(const Context& context, void* event, void* stream)
{
  if (event == nullptr) {
    throw CudaError("record of a moved-from Event", CUDA_ERROR_INVALID_HANDLE);
  }
  const driver::ScopedContext scope(context_of(context));
  driver::check(driver::require_driver().event_record(static_cast<CUevent>(event), static_cast<CUstream>(stream)),
                [&] { return "cuEventRecord" + on_device(context); });
}

} // namespace

void Event::record(const Stream& stream)
{
  if (stream.handle() == nullptr) {
    throw CudaError("record on a moved-from Stream", CUDA_ERROR_INVALID_HANDLE);
  }
  record_on(m_context, m_event, stream.handle());
}

void Event::record_default()
{
  record_on(m_context, m_event, nullptr);
}

void Event::synchronize() const
{
  if (m_event == nullptr) {
    throw CudaError("synchronize of a moved-from Event", CUDA_ERROR_INVALID_HANDLE);
  }
  const driver::ScopedContext scope(context_of(m_context));
  driver::check(driver::require_driver().event_synchronize(static_cast<CUevent>(m_event)),
                [&] { return "cuEventSynchronize" + on_device(m_context); });
}

float elapsed_ms(const Event& start, const Event& end)
{
  if (start.handle() == nullptr) {
    throw CudaError("elapsed_ms from a moved-from Event", CUDA_ERROR_INVALID_HANDLE);
  }
  end.synchronize();
  float ms = 0;
  driver::check(driver::require_driver().event_elapsed_time(&ms, static_cast<CUevent>(start.handle()),
                                                            static_cast<CUevent>(end.handle())),
                [] { return std::string("cuEventElapsedTime (were both events recorded?)"); });
  return ms;
}

} // namespace kjit
