/* Assertions for the C API tests: each failure is printed with its line and the thread's last
   kjit error, and counted; main() returns nonzero if any failed. */
#ifndef KJIT_TESTS_CAPI_CHECK_H
#define KJIT_TESTS_CAPI_CHECK_H

#include <kjit/kjit.h>

#include <stdio.h>
#include <string.h>

extern int g_failures;

#define CHECK(condition)                                                                                   \
  do {                                                                                                     \
    if (!(condition)) {                                                                                    \
      fprintf(stderr, "%s:%d: CHECK(%s) failed (last kjit error: %s)\n", __FILE__, __LINE__, #condition,  \
              kjit_last_error_message());                                                                  \
      ++g_failures;                                                                                        \
    }                                                                                                      \
  } while (0)

/* `call` returns `expected`; prints both names and the message otherwise. */
#define CHECK_STATUS(call, expected)                                                                       \
  do {                                                                                                     \
    const kjit_status check_status_ = (call);                                                              \
    if (check_status_ != (expected)) {                                                                     \
      fprintf(stderr, "%s:%d: %s returned %s, expected %s (%s)\n", __FILE__, __LINE__, #call,              \
              kjit_status_name(check_status_), kjit_status_name(expected), kjit_last_error_message());     \
      ++g_failures;                                                                                        \
    }                                                                                                      \
  } while (0)

#define CHECK_OK(call) CHECK_STATUS(call, KJIT_OK)

/* `text` contains `part`. */
#define CHECK_CONTAINS(text, part)                                                                         \
  do {                                                                                                     \
    const char* check_text_ = (text);                                                                      \
    if (check_text_ == NULL || strstr(check_text_, (part)) == NULL) {                                      \
      fprintf(stderr, "%s:%d: '%s' does not contain '%s'\n", __FILE__, __LINE__,                           \
              check_text_ ? check_text_ : "(null)", (part));                                               \
      ++g_failures;                                                                                        \
    }                                                                                                      \
  } while (0)

#endif
