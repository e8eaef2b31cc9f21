#include "status.h"

#include "bytes.h"

namespace nanort {
namespace {

// Appends to out[0..size) while there is room for the terminator; counts
// every character so the caller learns the untruncated length.
struct Sink {
  char* out;
  size_t size;
  size_t used;
  void Put(char c) {
    if (used + 1 < size) out[used] = c;
    ++used;
  }
  void PutString(const char* text, size_t max) {
    for (size_t i = 0; i < max && text[i] != '\0'; ++i) Put(text[i]);
  }
  void PutUnsigned(unsigned long long value, unsigned base) {
    char digits[24];
    size_t n = 0;
    do {
      digits[n++] = "0123456789abcdef"[value % base];
      value /= base;
    } while (value != 0);
    while (n != 0) Put(digits[--n]);
  }
};

}  // namespace

int FormatV(char* out, size_t size, const char* format, va_list args) {
  Sink sink{out, size, 0};
  for (const char* p = format; *p != '\0'; ++p) {
    if (*p != '%') {
      sink.Put(*p);
      continue;
    }
    ++p;
    size_t precision = static_cast<size_t>(-1);
    if (*p == '.') {
      ++p;
      if (*p == '*') {
        const int given = va_arg(args, int);
        precision = given < 0 ? static_cast<size_t>(-1) : static_cast<size_t>(given);
        ++p;
      } else {
        precision = 0;
        while (*p >= '0' && *p <= '9') precision = precision * 10 + static_cast<size_t>(*p++ - '0');
      }
    }
    // One va_arg per argument class keeps this small: integers are read as
    // 32 or 64 bits by their size on this ABI, pointers as pointers.
    int longs = 0;
    bool size_t_arg = false;
    while (*p == 'l') ++longs, ++p;
    if (*p == 'z') size_t_arg = true, ++p;
    const bool wide =
        longs >= 2 || (longs == 1 && sizeof(long) == 8) || (size_t_arg && sizeof(size_t) == 8);
    switch (*p) {
      case 's':
      case 'p': {
        const char* text = va_arg(args, const char*);
        if (*p == 's') {
          // glibc prints "(null)" for a null string; so does this.
          sink.PutString(text != nullptr ? text : "(null)", precision);
        } else if (text == nullptr) {
          sink.PutString("(nil)", 5);  // %p as glibc writes it
        } else {
          sink.PutString("0x", 2);
          sink.PutUnsigned(reinterpret_cast<uintptr_t>(text), 16);
        }
        break;
      }
      case 'd':
      case 'u': {
        unsigned long long value = wide ? va_arg(args, unsigned long long) : va_arg(args, unsigned);
        if (*p == 'd') {
          const long long signed_value =
              wide ? static_cast<long long>(value) : static_cast<int>(static_cast<unsigned>(value));
          if (signed_value < 0) {
            sink.Put('-');
            value = 0ull - static_cast<unsigned long long>(signed_value);
          } else {
            value = static_cast<unsigned long long>(signed_value);
          }
        }
        sink.PutUnsigned(value, 10);
        break;
      }
      case '%':
        sink.Put('%');
        break;
      default:
        // A conversion this formatter does not know, or a trailing '%':
        // stop rather than misread the arguments.
        goto done;
    }
  }
done:
  if (size != 0) out[sink.used < size ? sink.used : size - 1] = '\0';
  return static_cast<int>(sink.used);
}

int Format(char* out, size_t size, const char* format, ...) {
  va_list args;
  va_start(args, format);
  const int length = FormatV(out, size, format, args);
  va_end(args);
  return length;
}

nanort_status_code SetStatus(nanort_status* status, nanort_status_code code, const char* format,
                             ...) {
  if (status == nullptr) return code;
  status->code = code;
  va_list args;
  va_start(args, format);
  FormatV(status->message, sizeof(status->message), format, args);
  va_end(args);
  return code;
}

nanort_status_code SetStatusAt(nanort_status* status, nanort_status_code code, const char* file,
                               unsigned line) {
  if (status == nullptr) return code;
  status->code = code;
  // No Sink: 32-bit digits keep 64-bit division out of short-message builds.
  char* out = status->message;
  __builtin_memcpy(out, "check ", 6);
  size_t used = 6;
  // Leaves room for ':', ten digits and the terminator.
  while (*file != '\0' && used < sizeof(status->message) - 12) out[used++] = *file++;
  out[used++] = ':';
  char digits[10];
  size_t count = 0;
  do {
    digits[count++] = static_cast<char>('0' + line % 10);
    line /= 10;
  } while (line != 0);
  while (count != 0) out[used++] = digits[--count];
  out[used] = '\0';
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
  // One string of names in code order: no table of pointers to store.
  static_assert(NANORT_OK == 0 && NANORT_UNAVAILABLE == 9, "names below are in code order");
  const char* name =
      "OK\0INVALID_ARGUMENT\0INVALID_PROGRAM\0UNSUPPORTED_VERSION\0UNSUPPORTED_TARGET\0"
      "ARENA_TOO_SMALL\0SHAPE_MISMATCH\0NOT_FOUND\0OUT_OF_MEMORY\0UNAVAILABLE\0";
  if (static_cast<unsigned>(code) > NANORT_UNAVAILABLE) return "UNKNOWN_STATUS";
  return nanort::PackedName(name, static_cast<unsigned>(code));
}
