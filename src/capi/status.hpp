// The C API's boundary: every entry point runs its body through guarded(), which turns each C++
// exception into a kjit_status and the calling thread's error state, so none crosses into C.
#pragma once

#include <kjit/kjit.h>

#include <type_traits>
#include <utility>

namespace kjit::capi {

// Records a failure the C layer found itself (a NULL argument, an index out of range) for
// kjit_last_error_*; returns `status`. Never throws.
kjit_status fail(kjit_status status, const char* message) noexcept;

// The status of the exception being handled (call only inside a catch block), recorded for
// kjit_last_error_*. Never throws: an allocation that fails while recording it still leaves
// KJIT_ERROR_OUT_OF_MEMORY and a message.
kjit_status fail_current_exception() noexcept;

// Runs `body` (which returns nothing, or a kjit_status of its own) and returns KJIT_OK, or the
// status of what it threw.
template <typename Body>
kjit_status guarded(Body&& body) noexcept
{
  try {
    if constexpr (std::is_same_v<decltype(body()), kjit_status>) {
      return std::forward<Body>(body)();
    } else {
      std::forward<Body>(body)();
      return KJIT_OK;
    }
  } catch (...) {
    return fail_current_exception();
  }
}

// Each pointer argument given non-null, or KJIT_ERROR_INVALID_ARGUMENT naming the first that is not.
#define KJIT_CAPI_REQUIRE(pointer)                                                                   \
  do {                                                                                               \
    if ((pointer) == nullptr) {                                                                      \
      return ::kjit::capi::fail(KJIT_ERROR_INVALID_ARGUMENT, __func__, #pointer);                    \
    }                                                                                                \
  } while (false)

// fail() for a NULL argument: "kjit_cache_get: `program` is NULL".
kjit_status fail(kjit_status status, const char* function, const char* argument) noexcept;

} // namespace kjit::capi
