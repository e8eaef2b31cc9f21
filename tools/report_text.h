// Small helpers the tools' text, JSON and SVG writers share: printf-style
// appending to a string, and null-safe reads of a program's flatbuffer
// vectors and strings (the verifier lets optional fields be absent).
#ifndef NANORT_TOOLS_REPORT_TEXT_H_
#define NANORT_TOOLS_REPORT_TEXT_H_

#include <cstdarg>
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

}  // namespace nanort::tools

#endif  // NANORT_TOOLS_REPORT_TEXT_H_
