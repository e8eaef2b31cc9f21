// Small helpers the tools' text, JSON and SVG writers share: printf-style
// appending to a string, and null-safe reads of a program's flatbuffer
// vectors and strings (the verifier lets optional fields be absent).
#ifndef NANORT_TOOLS_REPORT_TEXT_H_
#define NANORT_TOOLS_REPORT_TEXT_H_

#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "flatbuffers/flatbuffers.h"

namespace nanort::tools {

// Appends printf(format, ...) to *out.
__attribute__((format(printf, 2, 3))) inline void Appendf(std::string* out, const char* format,
                                                          ...) {
  va_list args;
  va_start(args, format);
  va_list copy;
  va_copy(copy, args);
  const int n = std::vsnprintf(nullptr, 0, format, copy);
  va_end(copy);
  if (n > 0) {
    const size_t old = out->size();
    out->resize(old + static_cast<size_t>(n) + 1);
    std::vsnprintf(&(*out)[old], static_cast<size_t>(n) + 1, format, args);
    out->resize(old + static_cast<size_t>(n));
  }
  va_end(args);
}

// The size of an optional vector field; 0 when absent.
template <typename T>
flatbuffers::uoffset_t Size(const flatbuffers::Vector<T>* v) {
  return v ? v->size() : 0;
}

// An optional string field; empty when absent.
inline std::string_view Str(const flatbuffers::String* s) {
  return s ? std::string_view(s->c_str(), s->size()) : std::string_view();
}

// Length of the valid UTF-8 sequence at s[i] (1 for ASCII), or 0 if there is
// none (a stray or truncated byte, an overlong form, a surrogate, past
// U+10FFFF); *cp is the code point it encodes.
inline size_t Utf8Decode(std::string_view s, size_t i, uint32_t* cp) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  size_t n;
  if (c < 0x80) {
    *cp = c;
    return 1;
  }
  if ((c & 0xe0) == 0xc0) {
    n = 2;
    *cp = c & 0x1f;
  } else if ((c & 0xf0) == 0xe0) {
    n = 3;
    *cp = c & 0x0f;
  } else if ((c & 0xf8) == 0xf0) {
    n = 4;
    *cp = c & 0x07;
  } else {
    return 0;
  }
  if (s.size() - i < n) return 0;
  for (size_t k = 1; k < n; ++k) {
    const unsigned char cc = static_cast<unsigned char>(s[i + k]);
    if ((cc & 0xc0) != 0x80) return 0;
    *cp = (*cp << 6) | (cc & 0x3f);
  }
  const uint32_t min_cp[] = {0, 0, 0x80, 0x800, 0x10000};
  if (*cp < min_cp[n] || *cp > 0x10ffff || (*cp >= 0xd800 && *cp <= 0xdfff)) return 0;
  return n;
}

}  // namespace nanort::tools

#endif  // NANORT_TOOLS_REPORT_TEXT_H_
