#include "status.h"

#include <stdarg.h>
#include <stdio.h>

namespace nanort {

nanort_status_code SetStatus(nanort_status* status, nanort_status_code code, const char* format,
                             ...) {
  if (status == nullptr) return code;
  status->code = code;
  va_list args;
  va_start(args, format);
  // vsnprintf truncates and always NUL-terminates within the buffer.
  const int written = vsnprintf(status->message, sizeof(status->message), format, args);
  va_end(args);
  if (written < 0) status->message[0] = '\0';
  return code;
}

nanort_status_code SetOk(nanort_status* status) {
  if (status != nullptr) {
    status->code = NANORT_OK;
    status->message[0] = '\0';
  }
  return NANORT_OK;
}

}  // namespace nanort

extern "C" const char* nanort_status_code_name(nanort_status_code code) {
  switch (code) {
    case NANORT_OK:
      return "OK";
    case NANORT_INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case NANORT_INVALID_PROGRAM:
      return "INVALID_PROGRAM";
    case NANORT_UNSUPPORTED_VERSION:
      return "UNSUPPORTED_VERSION";
    case NANORT_UNSUPPORTED_TARGET:
      return "UNSUPPORTED_TARGET";
    case NANORT_ARENA_TOO_SMALL:
      return "ARENA_TOO_SMALL";
    case NANORT_SHAPE_MISMATCH:
      return "SHAPE_MISMATCH";
    case NANORT_NOT_FOUND:
      return "NOT_FOUND";
    case NANORT_OUT_OF_MEMORY:
      return "OUT_OF_MEMORY";
    case NANORT_UNAVAILABLE:
      return "UNAVAILABLE";
  }
  return "UNKNOWN_STATUS";
}
