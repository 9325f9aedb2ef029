// CUDA streams and events as owning, movable objects beside the raw handles launches take.
#pragma once

#include <kjit/module.hpp>

namespace kjit {

// A stream of a context: made by kjit (cuStreamCreate, non-blocking: it does not wait for the
// legacy default stream) and destroyed with the object, or an application's CUstream wrapped
// (never destroyed by kjit). Move-only; keeps its context alive. Launch on it with
// `config.stream = stream.handle()`.
class Stream {
public:
  // Throws CudaError (no driver, no device, the driver refusing).
  explicit Stream(const Context& context);
  // An application-owned CUstream (as void*) of `context`; kjit does not destroy it. Throws
  // CudaError for a null stream (the default stream needs no object: LaunchConfig::stream = nullptr).
  static Stream wrap(const Context& context, void* cu_stream);
  Stream(Stream&& other) noexcept;
  Stream& operator=(Stream&& other) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream();

  // Waits for everything queued on the stream (cuStreamSynchronize). Throws CudaError, naming
  // the device, for a failure of the work queued (a kernel that faulted).
  void synchronize() const;
  // The CUstream; null once moved from.
  void* handle() const noexcept { return m_stream; }
  const Context& context() const noexcept { return m_context; }

private:
  Stream(const Context& context, void* stream, bool owned) : m_context(context), m_stream(stream), m_owned(owned) {}
  Context m_context;
  void* m_stream = nullptr;
  bool m_owned = false;
};

// A CUDA event of a context (cuEventCreate, with timing), to time work on streams:
//   start.record(stream); kernel.launch(config, …); end.record(stream);
//   float ms = elapsed_ms(start, end);
// Move-only; keeps its context alive.
class Event {
public:
  // Throws CudaError.
  explicit Event(const Context& context);
  Event(Event&& other) noexcept;
  Event& operator=(Event&& other) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  ~Event();

  // Records the event on `stream` (cuEventRecord): it completes when the work queued before it
  // has. Throws CudaError for a stream of another context (the driver refuses it).
  void record(const Stream& stream);
  // Records it on the context's default stream.
  void record_default();
  // Waits for the event to complete (cuEventSynchronize). Throws CudaError.
  void synchronize() const;
  void* handle() const noexcept { return m_event; }

private:
  Context m_context;
  void* m_event = nullptr;
};

// Milliseconds between two recorded events of one context (cuEventElapsedTime), after waiting
// for `end`. Throws CudaError when either was never recorded.
float elapsed_ms(const Event& start, const Event& end);

} // namespace kjit
