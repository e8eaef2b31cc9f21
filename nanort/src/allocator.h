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

// *out = a + b; true on overflow, like the builtin.
inline bool AddOverflows(uint64_t a, uint64_t b, uint64_t* out) {
  return __builtin_add_overflow(a, b, out);
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

// Refuses, saying why, nanort_allocator_system() on a bare-metal build
// (NANORT_PLATFORM=none), where it has no memory to give: without this the
// first allocation fails with a bare "allocator returned NULL". Left out of
// the short-message build (whose message would be only "check FILE:LINE",
// as the NULL allocation's is) to keep its bytes.
#if defined(NANORT_PLATFORM_NONE) && !defined(NANORT_SHORT_MESSAGES)
#define NANORT_REFUSE_BARE_METAL_SYSTEM_ALLOCATOR(allocator, status)                          \
  NANORT_CHECK_OR_RETURN(                                                                     \
      (allocator).alloc != nanort_allocator_system().alloc, status, NANORT_OUT_OF_MEMORY,     \
      "nanort_allocator_system() allocates nothing on a bare-metal build "                    \
      "(NANORT_PLATFORM=none): pass your own nanort_allocator, e.g. a bump allocator over a " \
      "static buffer")
#else
#define NANORT_REFUSE_BARE_METAL_SYSTEM_ALLOCATOR(allocator, status) \
  do {                                                               \
  } while (0)
#endif

// Lays out arrays back to back in one block: call Add for each array (it
// returns the array's byte offset), then allocate Size() bytes at Alignment().
class BlockLayout {
 public:
  // size_t arithmetic: on 32-bit targets 64-bit overflow checks cost twice
  // the code, and a block over SIZE_MAX cannot be allocated anyway.
  size_t Add(uint64_t count, size_t element_size, size_t element_alignment) {
    size_t begin, bytes, end;
    if (element_alignment > alignment_) alignment_ = element_alignment;
    if (count > SIZE_MAX || __builtin_add_overflow(size_, element_alignment - 1, &begin) ||
        __builtin_mul_overflow(static_cast<size_t>(count), element_size, &bytes) ||
        __builtin_add_overflow(begin & ~(element_alignment - 1), bytes, &end)) {
      overflow_ = true;
      return 0;
    }
    size_ = end;
    return begin & ~(element_alignment - 1);
  }
  template <typename T>
  size_t Add(uint64_t count) {
    return Add(count, sizeof(T), alignof(T));
  }
  bool overflow() const { return overflow_; }
  size_t size() const { return size_; }
  size_t alignment() const { return alignment_; }

 private:
  size_t size_ = 0;
  size_t alignment_ = 1;
  bool overflow_ = false;
};

}  // namespace nanort

#endif  // NANORT_SRC_ALLOCATOR_H_
