// nanort's own pool of worker threads (NANORT_WITH_THREADS; the posix
// platform implements it in platform/posix_thread_pool.cc). Sessions use it
// through the same parallel-for shape as a caller's pool
// (nanort_parallel_for_fn), so run has one threaded path for both.
#ifndef NANORT_SRC_THREAD_POOL_H_
#define NANORT_SRC_THREAD_POOL_H_

#include <stddef.h>

#include "nanort/nanort.h"

namespace nanort {

struct ThreadPool;

// Hidden: sessions take these functions' addresses, which for a default-
// visibility symbol in position-independent code goes through the GOT (and
// leaves libnanort.a an undefined _GLOBAL_OFFSET_TABLE_).
#define NANORT_THREAD_POOL_API __attribute__((visibility("hidden")))

// Starts `num_workers` (>= 1) threads that sleep until ThreadPoolParallelFor
// wakes them. The pool's state comes from `allocator` (freed by
// ThreadPoolDestroy); the threads' stacks from the C library. On failure
// *out_pool is NULL and no thread is left running.
NANORT_THREAD_POOL_API nanort_status_code ThreadPoolCreate(size_t num_workers,
                                                           nanort_allocator allocator,
                                                           ThreadPool** out_pool,
                                                           nanort_status* status);

// Wakes the workers, which exit, joins them and frees the pool. Not while a
// ThreadPoolParallelFor runs.
NANORT_THREAD_POOL_API void ThreadPoolDestroy(ThreadPool* pool);

// A nanort_parallel_for_fn over `pool` (a ThreadPool*): fn(ctx, i) for every i
// in [0, n), the calling thread taking i = 0, 1 + W, ... and worker w (1..W)
// taking i = w, w + 1 + W, ... (a static split), returning when all are done.
// One caller at a time per pool. Allocates nothing.
NANORT_THREAD_POOL_API void ThreadPoolParallelFor(void* pool, size_t n,
                                                  void (*fn)(void* ctx, size_t i), void* ctx);

}  // namespace nanort

#endif  // NANORT_SRC_THREAD_POOL_H_
