// Allocation helpers: overflow-checked size arithmetic and a layout builder
// that packs several arrays into one allocation, so that load and session
// creation each make as few calls to the caller's allocator as possible.
#ifndef NANORT_SRC_ALLOCATOR_H_
#define NANORT_SRC_ALLOCATOR_H_

#include <stddef.h>
#include <stdint.h>

#include "nanort/nanort.h"

namespace nanort {

inline bool IsPowerOfTwo(uint64_t value) { return value != 0 && (value & (value - 1)) == 0; }

// *out = a + b (or a * b); both return true on overflow, like the builtins.
inline bool AddOverflows(uint64_t a, uint64_t b, uint64_t* out) {
  return __builtin_add_overflow(a, b, out);
}
inline bool MulOverflows(uint64_t a, uint64_t b, uint64_t* out) {
  return __builtin_mul_overflow(a, b, out);
}

// Rounds `value` up to a multiple of `alignment` (a power of two); false on
// overflow.
inline bool AlignUp(uint64_t value, uint64_t alignment, uint64_t* out) {
  uint64_t sum;
  if (AddOverflows(value, alignment - 1, &sum)) return false;
  *out = sum & ~(alignment - 1);
  return true;
}

inline bool IsAligned(const void* ptr, uint64_t alignment) {
  return (reinterpret_cast<uintptr_t>(ptr) & (alignment - 1)) == 0;
}

inline bool IsValidAllocator(const nanort_allocator& allocator) {
  return allocator.alloc != nullptr && allocator.free != nullptr;
}

// Lays out arrays back to back in one block: call Add for each array (it
// returns the array's byte offset), then allocate Size() bytes at Alignment().
class BlockLayout {
 public:
  size_t Add(uint64_t count, uint64_t element_size, uint64_t element_alignment) {
    uint64_t begin, bytes, end;
    if (element_alignment > alignment_) alignment_ = element_alignment;
    if (!AlignUp(size_, element_alignment, &begin) || MulOverflows(count, element_size, &bytes) ||
        AddOverflows(begin, bytes, &end) || end > SIZE_MAX) {
      overflow_ = true;
      return 0;
    }
    size_ = end;
    return static_cast<size_t>(begin);
  }
  template <typename T>
  size_t Add(uint64_t count) {
    return Add(count, sizeof(T), alignof(T));
  }
  bool overflow() const { return overflow_; }
  size_t size() const { return static_cast<size_t>(size_); }
  size_t alignment() const { return static_cast<size_t>(alignment_); }

 private:
  uint64_t size_ = 0;
  uint64_t alignment_ = 1;
  bool overflow_ = false;
};

}  // namespace nanort

#endif  // NANORT_SRC_ALLOCATOR_H_
