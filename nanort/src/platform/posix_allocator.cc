// The posix platform's allocator: the C library's aligned_alloc and free.
#include <stdlib.h>

#include "allocator.h"

namespace {

void* SystemAlloc(void* /*self*/, size_t size, size_t alignment) {
  if (!nanort::IsPowerOfTwo(alignment)) return nullptr;
  // aligned_alloc wants a multiple of sizeof(void*) as alignment and a size
  // that is a multiple of the alignment; a zero size may return NULL, which
  // callers would read as out of memory.
  if (alignment < sizeof(void*)) alignment = sizeof(void*);
  uint64_t rounded;
  if (!nanort::AlignUp(size == 0 ? 1 : size, alignment, &rounded) || rounded > SIZE_MAX) {
    return nullptr;
  }
  return aligned_alloc(alignment, static_cast<size_t>(rounded));
}

void SystemFree(void* /*self*/, void* ptr) { free(ptr); }

}  // namespace

extern "C" nanort_allocator nanort_allocator_system(void) {
  nanort_allocator allocator;
  allocator.self = nullptr;
  allocator.alloc = &SystemAlloc;
  allocator.free = &SystemFree;
  return allocator;
}
