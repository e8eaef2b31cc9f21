// What session.cc shares with session_options.cc.
#ifndef NANORT_SRC_SESSION_INTERNAL_H_
#define NANORT_SRC_SESSION_INTERNAL_H_

#include <stdint.h>

#include "nanort/nanort.h"
#if NANORT_WITH_THREADS
#include "thread_pool.h"
#endif

namespace nanort {

// One thunk, resolved. A kernel thunk calls `kernel(&args, 0, count)`; a copy
// thunk (kernel == NULL) moves `count` bytes from args.buffers[0] to
// args.buffers[1]. args.buffers points into the session's slot array. A
// GpuCopyThunk has the same two slots (NULL on its device side) and count 0:
// the GPU offload copies through them; a GpuLaunchThunk has none.
struct ExecutableThunk {
  nanort_kernel_fn kernel;
  nanort_kernel_args args;
  uint64_t count;
};

#if NANORT_WITH_CONTROL_FLOW
// An IfThunk or LoopThunk of the session's flattened thunks (pre-order: the
// thunk itself, then its then_thunks and else_thunks, or its body, then its
// successor). Its own ExecutableThunk does nothing; the thunks it nests lie
// in [index + 1, end), and the control thunks among them, in pre-order too,
// are the session's controls [this + 1, next_control).
struct ControlThunk {
  uint32_t index;         // its position in the session's thunks
  uint32_t split;         // If: where else_thunks begin (then: [index + 1, split)); Loop: end
  uint32_t end;           // one past the last thunk it nests
  uint32_t else_control;  // If: the first control thunk at or after split
  uint32_t next_control;  // the first control thunk at or after end
  // Slots of the session (kNoSlot: none) holding the buffers' addresses,
  // patched per run like any thunk argument.
  uint32_t cond;
  uint32_t trip_count;  // Loop: int64
  uint32_t counter;     // Loop: int64, in the arena
  uint64_t max_trips;   // Loop: >= 1; 0 marks an If
};
constexpr uint32_t kNoSlot = 0xFFFFFFFF;
#endif

#if NANORT_WITH_THREADS
// Makes `session`'s runs split each kernel's tasks into num_chunks chunks
// over parallel_for(pool_user_data, ...). own_pool, when not NULL, is
// released with destroy_pool when the session is, and chunk_scratch (chunks
// 1.. num_chunks - 1's scratch, from the session's allocator; NULL when the
// model needs none) is freed with the session's allocator.
void SessionEnableSplit(nanort_session* session, nanort_parallel_for_fn parallel_for,
                        void* pool_user_data, uint32_t num_chunks, ThreadPool* own_pool,
                        void (*destroy_pool)(ThreadPool* pool), uint8_t* chunk_scratch);
#endif

}  // namespace nanort

#endif  // NANORT_SRC_SESSION_INTERNAL_H_
