// nanort_session_create_with_options: nanort_session_create's session, then
// the threads. In an object file of its own, so that a program that never
// calls it links neither nanort's pool nor the C library's threads (with a
// static glibc, pthread_create alone pulls in about 70 KB).
#include <inttypes.h>
#include <string.h>

#include "model.h"
#include "session_internal.h"
#include "status.h"

namespace nanort {

// nanort_session_create's session, then the threads: a program that never
// calls this links the same session code as before threads.
extern "C" nanort_status_code nanort_session_create_with_options(
    const nanort_model* model, void* arena, size_t arena_size, nanort_allocator allocator,
    const nanort_session_options* options, nanort_session** out_session, nanort_status* status) {
  NANORT_CHECK_OR_RETURN(out_session != nullptr, status, NANORT_INVALID_ARGUMENT,
                         "out_session is NULL");
  *out_session = nullptr;
  // Only the first struct_size bytes are the caller's; what this runtime
  // knows beyond them reads as 0, what the caller's newer header added must
  // be 0 (unset) here.
  nanort_session_options known;
  memset(&known, 0, sizeof(known));
  if (options != nullptr) {
    const size_t size = options->struct_size;
    NANORT_CHECK_OR_RETURN(size >= sizeof(known) && size <= 4096, status, NANORT_INVALID_ARGUMENT,
                           "options->struct_size is %zu, expected sizeof(nanort_session_options) "
                           "= %zu",
                           size, sizeof(known));
    memcpy(&known, options, sizeof(known));
    const uint8_t* bytes = reinterpret_cast<const uint8_t*>(options);
    for (size_t b = sizeof(known); b < size; ++b) {
      NANORT_CHECK_OR_RETURN(bytes[b] == 0, status, NANORT_UNSUPPORTED_VERSION,
                             "options of %zu bytes set byte %zu, beyond the %zu bytes of "
                             "nanort_session_options this runtime knows",
                             size, b, sizeof(known));
    }
  }
  const bool split = known.num_threads > 1;
#if !NANORT_WITH_THREADS
  NANORT_CHECK_OR_RETURN(!split, status, NANORT_UNAVAILABLE,
                         "num_threads is %" PRIu32
                         ", but this nanort was built without threads "
                         "(NANORT_WITH_THREADS=OFF)",
                         known.num_threads);
#endif
  NANORT_RETURN_IF_ERROR(
      nanort_session_create(model, arena, arena_size, allocator, out_session, status));
#if NANORT_WITH_THREADS
  if (split) {
    nanort_session* session = *out_session;
    // Every chunk but the first (the arena's) gets scratch of its own, once.
    uint8_t* chunk_scratch = nullptr;
    const size_t scratch = model->scratch_size;
    if (scratch != 0) {
      const size_t others = known.num_threads - 1;
      chunk_scratch =
          others <= SIZE_MAX / scratch
              ? static_cast<uint8_t*>(allocator.alloc(allocator.self, others * scratch, 64))
              : nullptr;
      if (chunk_scratch == nullptr) {
        nanort_session_release(session);
        *out_session = nullptr;
        return NANORT_FAIL(status, NANORT_OUT_OF_MEMORY,
                           "allocator returned NULL for %zu threads' scratch of %zu bytes each",
                           others, scratch);
      }
    }
    if (known.parallel_for != nullptr) {
      SessionEnableSplit(session, known.parallel_for, known.pool_user_data, known.num_threads,
                         nullptr, nullptr, chunk_scratch);
    } else {
      ThreadPool* pool = nullptr;
      const nanort_status_code code =
          ThreadPoolCreate(known.num_threads - 1, allocator, &pool, status);
      if (code != NANORT_OK) {
        if (chunk_scratch != nullptr) allocator.free(allocator.self, chunk_scratch);
        nanort_session_release(session);
        *out_session = nullptr;
        return code;
      }
      SessionEnableSplit(session, ThreadPoolParallelFor, pool, known.num_threads, pool,
                         ThreadPoolDestroy, chunk_scratch);
    }
  }
#endif
  return SetOk(status);
}

}  // namespace nanort
