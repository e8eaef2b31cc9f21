// Status reporting inside nanort: every failing call returns a code and, when
// the caller passed a nanort_status*, a message saying what failed and where.
#ifndef NANORT_SRC_STATUS_H_
#define NANORT_SRC_STATUS_H_

#include "nanort/nanort.h"

namespace nanort {

// Fills *status (if non-null) with `code` and a printf-style message,
// truncated to NANORT_STATUS_MESSAGE_SIZE, and returns `code`.
nanort_status_code SetStatus(nanort_status* status, nanort_status_code code, const char* format,
                             ...) __attribute__((format(printf, 3, 4)));

// Marks *status (if non-null) as NANORT_OK with an empty message.
nanort_status_code SetOk(nanort_status* status);

}  // namespace nanort

// Returns from the enclosing function with `expr`'s code unless it is OK.
#define NANORT_RETURN_IF_ERROR(expr)                    \
  do {                                                  \
    const nanort_status_code nanort_code_ = (expr);     \
    if (nanort_code_ != NANORT_OK) return nanort_code_; \
  } while (0)

// Returns `code` with a formatted message in `status` unless `cond` holds.
#define NANORT_CHECK_OR_RETURN(cond, status, code, ...)                     \
  do {                                                                      \
    if (!(cond)) return ::nanort::SetStatus((status), (code), __VA_ARGS__); \
  } while (0)

#endif  // NANORT_SRC_STATUS_H_
