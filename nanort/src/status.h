// Status reporting inside nanort: every failing call returns a code and, when
// the caller passed a nanort_status*, a message saying what failed and where.
//
// NANORT_MESSAGES (CMake) picks the message: full (default) formats one that
// names the buffer, thunk, shape or feature at fault; short
// (NANORT_SHORT_MESSAGES=1, for firmware where every byte counts) keeps the
// same checks and codes but reports only where the failing check is, as
// "check FILE:LINE" in nanort/src, and drops the message texts and the
// formatter from the binary.
#ifndef NANORT_SRC_STATUS_H_
#define NANORT_SRC_STATUS_H_

#include <stdarg.h>
#include <stddef.h>

#include "nanort/nanort.h"

namespace nanort {

#if defined(NANORT_SHORT_MESSAGES) && NANORT_SHORT_MESSAGES
constexpr bool kFullMessages = false;
#else
constexpr bool kFullMessages = true;
#endif

// printf into out[0..size), always NUL-terminated when size > 0; returns the
// length the whole text would have. Knows only what nanort's messages use:
// %s %.Ns %.*s %d %u %lld %llu %zu %p %% (vsnprintf would pull about 6 KB of
// newlib into a firmware image).
int FormatV(char* out, size_t size, const char* format, va_list args);
int Format(char* out, size_t size, const char* format, ...) __attribute__((format(printf, 3, 4)));

// Fills *status (if non-null) with `code` and a printf-style message,
// truncated to NANORT_STATUS_MESSAGE_SIZE, and returns `code`. Cold: only
// failing calls get here, so callers keep their fast path straight.
nanort_status_code SetStatus(nanort_status* status, nanort_status_code code, const char* format,
                             ...) __attribute__((format(printf, 3, 4), cold, noinline));

// The short form: "check FILE:LINE".
nanort_status_code SetStatusAt(nanort_status* status, nanort_status_code code, const char* file,
                               unsigned line) __attribute__((cold, noinline));

// Marks *status (if non-null) as NANORT_OK with an empty message.
nanort_status_code SetOk(nanort_status* status);

}  // namespace nanort

#ifdef __FILE_NAME__
#define NANORT_CHECK_FILE_ __FILE_NAME__
#else
#define NANORT_CHECK_FILE_ __FILE__
#endif

// Sets `code` and a message in `status` and yields `code`. The short form
// still type-checks the message's arguments (and keeps them "used"), but
// never evaluates them.
#if defined(NANORT_SHORT_MESSAGES) && NANORT_SHORT_MESSAGES
#define NANORT_FAIL(status, code, ...)                        \
  (false ? ::nanort::SetStatus((status), (code), __VA_ARGS__) \
         : ::nanort::SetStatusAt((status), (code), NANORT_CHECK_FILE_, __LINE__))
#else
#define NANORT_FAIL(status, code, ...) ::nanort::SetStatus((status), (code), __VA_ARGS__)
#endif

// Returns from the enclosing function with `expr`'s code unless it is OK.
#define NANORT_RETURN_IF_ERROR(expr)                    \
  do {                                                  \
    const nanort_status_code nanort_code_ = (expr);     \
    if (nanort_code_ != NANORT_OK) return nanort_code_; \
  } while (0)

// Returns `code` with a formatted message in `status` unless `cond` holds.
#define NANORT_CHECK_OR_RETURN(cond, status, code, ...)             \
  do {                                                              \
    if (!(cond)) return NANORT_FAIL((status), (code), __VA_ARGS__); \
  } while (0)

#endif  // NANORT_SRC_STATUS_H_
