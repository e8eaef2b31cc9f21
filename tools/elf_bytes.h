// Reading an ELF file's fields byte by byte (System V gABI), shared by the
// tools that look inside nanoc's objects and shared objects: a truncated or
// hostile file is only ever read inside its bounds, and the result is the
// same on any host (no <elf.h> structs, no misaligned loads).
#ifndef NANORT_TOOLS_ELF_BYTES_H_
#define NANORT_TOOLS_ELF_BYTES_H_

#include <cstddef>
#include <cstdint>

namespace nanort::tools {

// The n-byte (n <= 8) little-endian unsigned integer at p.
inline uint64_t LE(const uint8_t* p, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

// The n-byte (n <= 8) big-endian unsigned integer at p.
inline uint64_t BE(const uint8_t* p, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v = (v << 8) | p[i];
  return v;
}

// True when [offset, offset + length) lies inside [0, size).
inline bool InRange(uint64_t offset, uint64_t length, uint64_t size) {
  return offset <= size && length <= size - offset;
}

}  // namespace nanort::tools

#endif  // NANORT_TOOLS_ELF_BYTES_H_
