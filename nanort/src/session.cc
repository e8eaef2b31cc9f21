// Sessions: everything run needs is resolved here, once, so that run only
// writes the caller's pointers into their slots and calls the thunks.
#include <inttypes.h>
#include <string.h>

#include "allocator.h"
#include "model.h"
#include "session_internal.h"
#include "status.h"

namespace nanort {
namespace {

// A slot that holds a pointer into a caller's tensor, rewritten by every run.
struct TensorPatch {
  uint32_t slot;
  uint32_t tensor;  // input number, or num_inputs + output number
  uint64_t offset;
};

}  // namespace
}  // namespace nanort

struct nanort_session {
  const nanort_model* model;
  nanort_allocator allocator;
  void* owned_arena;  // NULL when the caller provided the arena
  uint8_t* arena;
  nanort::ExecutableThunk* thunks;
  size_t num_thunks;
  void** slots;
  nanort::TensorPatch* patches;
  size_t num_patches;
#if NANORT_WITH_CONTROL_FLOW
  // The program's IfThunks and LoopThunks, in pre-order; 0: runs take the
  // loops below as they are.
  nanort::ControlThunk* controls;
  size_t num_controls;
#endif
#if NANORT_WITH_THUNK_OBSERVER
  nanort_thunk_observer observer;  // NULL: runs take the plain loop
  void* observer_data;
#endif
#if NANORT_WITH_THREADS
  // Set only by nanort_session_create_with_options for num_threads > 1, and
  // reached only through these pointers, so that a program that never asks
  // for threads links none of their code. run_split NULL: the plain loop.
  void (*run_split)(const nanort_session& session);
  nanort_parallel_for_fn parallel_for;  // the caller's, or ThreadPoolParallelFor
  void* pool_user_data;                 // the caller's, or own_pool
  uint32_t num_chunks;                  // num_threads
  nanort::ThreadPool* own_pool;         // NULL with the caller's pool
  void (*destroy_pool)(nanort::ThreadPool* pool);
  // Chunks 1..num_chunks-1's scratch, model->scratch_size bytes each, from
  // the allocator (chunk 0 uses the arena's); NULL when the model has none.
  uint8_t* chunk_scratch;
#endif
  // GPU offload's part (model->gpu_offload's), NULL for a CPU-only model:
  // then run takes the loops above.
  nanort::GpuSession* gpu;
};

namespace nanort {
namespace {

// Formats dims as "[1,3]" into out, ending in "...]" when they do not fit.
void FormatDims(const int64_t* dims, uint32_t rank, char* out, size_t out_size) {
  size_t used = 0;
  out[used++] = '[';
  for (uint32_t d = 0; d < rank; ++d) {
    char number[24];
    const int length = Format(number, sizeof(number), "%s%lld", d == 0 ? "" : ",",
                              static_cast<long long>(dims[d]));
    if (used + static_cast<size_t>(length) + 5 > out_size) {
      memcpy(out + used, "...", 3);
      used += 3;
      break;
    }
    memcpy(out + used, number, static_cast<size_t>(length));
    used += static_cast<size_t>(length);
  }
  out[used++] = ']';
  out[used] = '\0';
}

nanort_status_code CheckTensor(const nanort_tensor& given, const nanort_tensor_info& needed,
                               const char* what, nanort_status* status) {
  if (given.dtype != needed.dtype) {
    return NANORT_FAIL(status, NANORT_SHAPE_MISMATCH, "%s '%s': dtype %s given, model needs %s",
                       what, needed.name, nanort_dtype_name(given.dtype),
                       nanort_dtype_name(needed.dtype));
  }
  NANORT_CHECK_OR_RETURN(given.rank == 0 || given.dims != nullptr, status, NANORT_INVALID_ARGUMENT,
                         "%s '%s': rank %" PRIu32 " with NULL dims", what, needed.name, given.rank);
  bool same = given.rank == needed.rank;
  for (uint32_t d = 0; same && d < given.rank; ++d) same = given.dims[d] == needed.dims[d];
  if (!same) {
    char given_text[80] = "", needed_text[80] = "";
    if (kFullMessages) {
      FormatDims(given.dims, given.rank, given_text, sizeof(given_text));
      FormatDims(needed.dims, needed.rank, needed_text, sizeof(needed_text));
    }
    return NANORT_FAIL(status, NANORT_SHAPE_MISMATCH, "%s '%s': shape %s given, model needs %s",
                       what, needed.name, given_text, needed_text);
  }
  NANORT_CHECK_OR_RETURN(given.data != nullptr || needed.size_bytes == 0, status,
                         NANORT_INVALID_ARGUMENT, "%s '%s': data is NULL", what, needed.name);
  // Kernels may rely on element alignment of the caller's tensors, no more.
  NANORT_CHECK_OR_RETURN(IsAligned(given.data, nanort_dtype_size(needed.dtype)), status,
                         NANORT_INVALID_ARGUMENT,
                         "%s '%s': data at %p is not aligned to its %zu-byte elements", what,
                         needed.name, given.data, nanort_dtype_size(needed.dtype));
  return NANORT_OK;
}

// Sizes in size_t: the verifier refused tensors this machine cannot address.
bool Overlap(const void* a, size_t a_size, const void* b, size_t b_size) {
  const uintptr_t a_begin = reinterpret_cast<uintptr_t>(a);
  const uintptr_t b_begin = reinterpret_cast<uintptr_t>(b);
  return a_size != 0 && b_size != 0 && a_begin < b_begin + b_size && b_begin < a_begin + a_size;
}

// The address of a buffer of `kind` that does not change between runs; Input
// and Output buffers get NULL here and a TensorPatch.
void* StaticAddress(const fb::Buffer& buffer, fb::BufferKind kind, const nanort_model& model,
                    uint8_t* arena) {
  switch (kind) {
    case fb::BufferKind::Constant:
      // Kernels receive void*, but the verifier proved no thunk writes a
      // Constant buffer, so the blob stays read-only in practice.
      return const_cast<uint8_t*>(model.def.constants) + buffer.offset();
    case fb::BufferKind::Arena:
      return arena + buffer.offset();
    default:
      return nullptr;
  }
}

inline void RunThunk(const ExecutableThunk& thunk) {
  if (thunk.kernel != nullptr) {
    thunk.kernel(&thunk.args, 0, thunk.count);
  } else if (thunk.count != 0) {
    // memmove: a copy between slices of one output tensor may overlap.
    memmove(thunk.args.buffers[1], thunk.args.buffers[0], static_cast<size_t>(thunk.count));
  }
}

#if NANORT_WITH_THUNK_OBSERVER
// The loop of an observed run, apart so that the plain loop stays as it is.
__attribute__((noinline)) void RunThunksObserved(const nanort_session& session) {
  for (size_t t = 0; t < session.num_thunks; ++t) {
    session.observer(session.observer_data, t, NANORT_THUNK_BEGIN);
    RunThunk(session.thunks[t]);
    session.observer(session.observer_data, t, NANORT_THUNK_END);
  }
}
#endif

#if NANORT_WITH_THREADS
// A kernel thunk split into `chunks` contiguous slices of its tasks: the
// first `extra` chunks take per_chunk + 1 tasks, the others per_chunk.
struct SplitKernel {
  const ExecutableThunk* thunk;
  uint64_t per_chunk;
  uint64_t extra;
  uint8_t* chunk_scratch;  // the session's
  size_t scratch_size;
};

// Chunk i > 0 gets scratch of its own: chunks of one kernel may run at once.
void RunChunk(void* ctx, size_t i) {
  const SplitKernel& split = *static_cast<const SplitKernel*>(ctx);
  const uint64_t chunk = i;
  const uint64_t begin = chunk * split.per_chunk + (chunk < split.extra ? chunk : split.extra);
  const uint64_t end = begin + split.per_chunk + (chunk < split.extra ? 1 : 0);
  if (chunk == 0 || split.chunk_scratch == nullptr) {
    split.thunk->kernel(&split.thunk->args, begin, end);
    return;
  }
  nanort_kernel_args args = split.thunk->args;
  args.scratch = split.chunk_scratch + (chunk - 1) * split.scratch_size;
  split.thunk->kernel(&args, begin, end);
}

// Copies and one-task kernels run on the calling thread; a kernel of more
// tasks goes to the parallel-for, which returns when every chunk is done (the
// barrier between thunks). Each task writes only its own outputs, so the
// result is the same whichever thread runs which chunk.
void RunThunkSplit(const nanort_session& session, const ExecutableThunk& thunk) {
  if (thunk.kernel == nullptr || thunk.count < 2) {
    RunThunk(thunk);
    return;
  }
  const uint64_t chunks = thunk.count < session.num_chunks ? thunk.count : session.num_chunks;
  const SplitKernel split{&thunk, thunk.count / chunks, thunk.count % chunks, session.chunk_scratch,
                          session.model->scratch_size};
  session.parallel_for(session.pool_user_data, static_cast<size_t>(chunks), RunChunk,
                       const_cast<SplitKernel*>(&split));
}

void RunThunksSplit(const nanort_session& session) {
#if NANORT_WITH_THUNK_OBSERVER
  if (session.observer != nullptr) {
    for (size_t t = 0; t < session.num_thunks; ++t) {
      session.observer(session.observer_data, t, NANORT_THUNK_BEGIN);
      RunThunkSplit(session, session.thunks[t]);
      session.observer(session.observer_data, t, NANORT_THUNK_END);
    }
    return;
  }
#endif
  for (size_t t = 0; t < session.num_thunks; ++t) RunThunkSplit(session, session.thunks[t]);
}
#endif

#if NANORT_WITH_CUDA
// A GPU session's host thunks (GPU offload's run loop calls these), as the
// plain, observed or split loop would run them.
void RunHostThunk(const nanort_session& session, size_t t) {
#if NANORT_WITH_THREADS
  if (session.run_split != nullptr) {
    RunThunkSplit(session, session.thunks[t]);
    return;
  }
#endif
  RunThunk(session.thunks[t]);
}

void ObserveThunk(const nanort_session& session, size_t t, nanort_thunk_event event) {
#if NANORT_WITH_THUNK_OBSERVER
  if (session.observer != nullptr) session.observer(session.observer_data, t, event);
#else
  (void)session, (void)t, (void)event;
#endif
}
#endif

#if NANORT_WITH_CONTROL_FLOW
// Runs of programs with control flow (format 1.4): the flattened thunks
// [begin, end), whose first control thunk at or after begin is `control`,
// each kernel and copy thunk as the plain, split or observed loop would run
// it, each If and Loop by running the ranges it nests. The recursion is as
// deep as the nesting, at most kMaxControlDepth.

__attribute__((cold, noinline)) nanort_status_code TooManyTrips(const nanort_session& session,
                                                                const ControlThunk& loop,
                                                                nanort_status* status) {
  const char* node = "";
  if (kFullMessages) {
    uint32_t level;
    const fb::Thunk* thunk = ThunkInPreOrder(*session.model, loop.index, &level);
    if (thunk != nullptr && thunk->node() != nullptr) node = thunk->node()->c_str();
  }
  return NANORT_FAIL(status, NANORT_INVALID_ARGUMENT,
                     "loop (thunk %" PRIu32
                     ", node '%s') would run more than its max_trips "
                     "of %llu iterations",
                     loop.index, node, static_cast<unsigned long long>(loop.max_trips));
}

inline void Observe(const nanort_session& session, size_t t, nanort_thunk_event event) {
#if NANORT_WITH_THUNK_OBSERVER
  if (session.observer != nullptr) session.observer(session.observer_data, t, event);
#else
  (void)session, (void)t, (void)event;
#endif
}

nanort_status_code RunRange(const nanort_session& session, size_t begin, size_t end, size_t control,
                            nanort_status* status);

nanort_status_code RunControl(const nanort_session& session, const ControlThunk& c, size_t control,
                              nanort_status* status) {
  void* const* slots = session.slots;
  if (c.max_trips == 0) {
    const bool taken = *static_cast<const uint8_t*>(slots[c.cond]) != 0;
    return taken ? RunRange(session, c.index + 1, c.split, control + 1, status)
                 : RunRange(session, c.split, c.end, c.else_control, status);
  }
  // The trip count is read once (unaligned-safe); a negative one means no
  // iteration, as does a condition of 0.
  int64_t trips = 0;
  if (c.trip_count != kNoSlot) memcpy(&trips, slots[c.trip_count], sizeof(trips));
  for (uint64_t i = 0;; ++i) {
    const int64_t counter = static_cast<int64_t>(i);
    memcpy(slots[c.counter], &counter, sizeof(counter));
    if (c.trip_count != kNoSlot && (trips <= 0 || static_cast<uint64_t>(trips) <= i)) break;
    if (c.cond != kNoSlot && *static_cast<const uint8_t*>(slots[c.cond]) == 0) break;
    if (i == c.max_trips) return TooManyTrips(session, c, status);
    NANORT_RETURN_IF_ERROR(RunRange(session, c.index + 1, c.end, control + 1, status));
  }
  return NANORT_OK;
}

nanort_status_code RunRange(const nanort_session& session, size_t begin, size_t end, size_t control,
                            nanort_status* status) {
  for (size_t t = begin; t < end;) {
    Observe(session, t, NANORT_THUNK_BEGIN);
    if (control < session.num_controls && session.controls[control].index == t) {
      const ControlThunk& c = session.controls[control];
      NANORT_RETURN_IF_ERROR(RunControl(session, c, control, status));
      Observe(session, t, NANORT_THUNK_END);
      t = c.end;
      control = c.next_control;
      continue;
    }
#if NANORT_WITH_THREADS
    if (session.run_split != nullptr) {
      RunThunkSplit(session, session.thunks[t]);
    } else {
      RunThunk(session.thunks[t]);
    }
#else
    RunThunk(session.thunks[t]);
#endif
    Observe(session, t, NANORT_THUNK_END);
    ++t;
  }
  return NANORT_OK;
}

__attribute__((noinline)) nanort_status_code RunControlFlow(const nanort_session& session,
                                                            nanort_status* status) {
  NANORT_RETURN_IF_ERROR(RunRange(session, 0, session.num_thunks, 0, status));
  return SetOk(status);
}
#endif

// Fills the session's slots and patches, in the order the verifier counted
// them.
struct SlotBinder {
  nanort_session* session;
  const nanort_model* model;
  const flatbuffers::Vector<flatbuffers::Offset<fb::Buffer>>* buffers;
  size_t slot;
  size_t patch;

  void Bind(uint32_t buffer_index) {
    const fb::Buffer& buffer = *buffers->Get(buffer_index);
    const fb::BufferKind kind = buffer.kind();
    session->slots[slot] = StaticAddress(buffer, kind, *model, session->arena);
    if (kind == fb::BufferKind::Input || kind == fb::BufferKind::Output) {
      const size_t first = kind == fb::BufferKind::Input ? 0 : model->num_inputs;
      session->patches[patch++] =
          TensorPatch{static_cast<uint32_t>(slot), static_cast<uint32_t>(first) + buffer.index(),
                      buffer.offset()};
    }
    ++slot;
  }
};

// Resolves a kernel, copy or GPU thunk into `exec`.
__attribute__((always_inline)) inline void BindThunk(const fb::Thunk& thunk, ExecutableThunk& exec,
                                                     SlotBinder& binder) {
  exec.args.buffers = binder.session->slots + binder.slot;
  if (const fb::KernelThunk* kernel = thunk.kind_as_KernelThunk()) {
    const auto* args = kernel->args();
    const uint32_t num_args = args != nullptr ? args->size() : 0;
    for (uint32_t a = 0; a < num_args; ++a) binder.Bind(args->Get(a));
    exec.kernel = binder.model->def.kernels[kernel->kernel()].fn;
    exec.args.num_buffers = num_args;
    exec.args.scratch = binder.session->arena + binder.model->scratch_offset;
    exec.count = kernel->task_count();
#if NANORT_WITH_CUDA
  } else if (const fb::CopyThunk* copy = thunk.kind_as_CopyThunk()) {
    binder.Bind(copy->src());
    binder.Bind(copy->dst());
    exec.kernel = nullptr;
    exec.args.num_buffers = 2;
    exec.count = copy->size();
  } else if (const fb::GpuCopyThunk* gpu_copy = thunk.kind_as_GpuCopyThunk()) {
    // The host side's address, patched per run when it is a tensor; the
    // GPU offload copies, so the host loop's memmove sees count 0.
    binder.Bind(gpu_copy->src());
    binder.Bind(gpu_copy->dst());
    exec.kernel = nullptr;
    exec.args.num_buffers = 2;
    exec.count = 0;
  } else {
    // A GpuLaunchThunk: device addresses only, which the GPU offload holds.
    exec.kernel = nullptr;
    exec.args.num_buffers = 0;
    exec.count = 0;
  }
#else
  } else {
    const fb::CopyThunk& copy = *thunk.kind_as_CopyThunk();
    binder.Bind(copy.src());
    binder.Bind(copy.dst());
    exec.kernel = nullptr;
    exec.args.num_buffers = 2;
    exec.count = copy.size();
  }
#endif
}

#if NANORT_WITH_CONTROL_FLOW
using ThunkList = flatbuffers::Vector<flatbuffers::Offset<fb::Thunk>>;

// Flattens nested thunk sequences in pre-order into the session's thunks
// and controls (recursion bounded by the verifier's kMaxControlDepth).
struct Flattener {
  SlotBinder binder;
  uint32_t next_thunk;
  uint32_t next_control;

  uint32_t BindSlot(uint32_t buffer_index) {
    if (buffer_index == 0xFFFFFFFF) return kNoSlot;
    const uint32_t slot = static_cast<uint32_t>(binder.slot);
    binder.Bind(buffer_index);
    return slot;
  }

  void Sequence(const ThunkList* thunks) {
    nanort_session& session = *binder.session;
    for (flatbuffers::uoffset_t i = 0; i < flatbuffers::VectorLength(thunks); ++i) {
      const fb::Thunk& thunk = *thunks->Get(i);
      const uint32_t t = next_thunk++;
      ExecutableThunk& exec = session.thunks[t];
      const fb::IfThunk* branch = thunk.kind_as_IfThunk();
      const fb::LoopThunk* loop = thunk.kind_as_LoopThunk();
      if (branch == nullptr && loop == nullptr) {
        BindThunk(thunk, exec, binder);
        continue;
      }
      exec = ExecutableThunk{nullptr, {session.slots + binder.slot, 0, nullptr}, 0};
      ControlThunk& control = session.controls[next_control++];
      control.index = t;
      control.cond = control.trip_count = control.counter = kNoSlot;
      control.max_trips = 0;
      if (branch != nullptr) {
        control.cond = BindSlot(branch->cond());
        Sequence(branch->then_thunks());
        control.split = next_thunk;
        control.else_control = next_control;
        Sequence(branch->else_thunks());
      } else {
        // The verifier's order: trip count, condition, counter.
        control.trip_count = BindSlot(loop->trip_count());
        control.cond = BindSlot(loop->cond());
        control.counter = BindSlot(loop->counter());
        control.max_trips = loop->max_trips();
        Sequence(loop->body());
        control.split = next_thunk;
      }
      control.end = next_thunk;
      control.next_control = next_control;
    }
  }
};
#endif

}  // namespace
}  // namespace nanort

using namespace nanort;  // NOLINT: the C API below is this file's only content.

extern "C" nanort_status_code nanort_session_create(const nanort_model* model, void* arena,
                                                    size_t arena_size, nanort_allocator allocator,
                                                    nanort_session** out_session,
                                                    nanort_status* status) {
  NANORT_CHECK_OR_RETURN(out_session != nullptr, status, NANORT_INVALID_ARGUMENT,
                         "out_session is NULL");
  *out_session = nullptr;
  NANORT_CHECK_OR_RETURN(model != nullptr, status, NANORT_INVALID_ARGUMENT, "model is NULL");
  NANORT_CHECK_OR_RETURN(IsValidAllocator(allocator), status, NANORT_INVALID_ARGUMENT,
                         "allocator has a NULL alloc or free function");
  NANORT_REFUSE_BARE_METAL_SYSTEM_ALLOCATOR(allocator, status);
  if (arena != nullptr) {
    NANORT_CHECK_OR_RETURN(
        arena_size >= model->arena_size && IsAligned(arena, model->arena_alignment), status,
        NANORT_ARENA_TOO_SMALL,
        "arena of %zu bytes at alignment %llu, model needs %llu bytes at "
        "alignment %" PRIu32,
        arena_size,
        static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(arena) &
                                        (~reinterpret_cast<uintptr_t>(arena) + 1)),
        static_cast<unsigned long long>(model->arena_size), model->arena_alignment);
  }

  const auto* buffers = model->program->buffers();
  const auto* thunks = model->entry->thunks();
#if NANORT_WITH_CONTROL_FLOW
  // Every level's thunks, flattened in pre-order.
  const size_t num_thunks = model->num_thunks;
#else
  const size_t num_thunks = thunks != nullptr ? thunks->size() : 0;
#endif
  const size_t num_slots = model->num_slots, num_patches = model->num_patches;

  BlockLayout layout;
  const size_t session_at = layout.Add<nanort_session>(1);
  const size_t thunks_at = layout.Add<ExecutableThunk>(num_thunks);
  const size_t slots_at = layout.Add<void*>(num_slots);
  const size_t patches_at = layout.Add<TensorPatch>(num_patches);
#if NANORT_WITH_CONTROL_FLOW
  const size_t controls_at = layout.Add<ControlThunk>(model->num_controls);
#endif
  NANORT_CHECK_OR_RETURN(!layout.overflow(), status, NANORT_OUT_OF_MEMORY,
                         "session tables too large");
  uint8_t* block =
      static_cast<uint8_t*>(allocator.alloc(allocator.self, layout.size(), layout.alignment()));
  NANORT_CHECK_OR_RETURN(block != nullptr, status, NANORT_OUT_OF_MEMORY,
                         "allocator returned NULL for the session (%zu bytes)", layout.size());
  nanort_session* session = reinterpret_cast<nanort_session*>(block + session_at);
  memset(session, 0, sizeof(*session));
  session->model = model;
  session->allocator = allocator;
  session->thunks = reinterpret_cast<ExecutableThunk*>(block + thunks_at);
  session->num_thunks = num_thunks;
  session->slots = reinterpret_cast<void**>(block + slots_at);
  session->patches = reinterpret_cast<TensorPatch*>(block + patches_at);
  session->num_patches = num_patches;
#if NANORT_WITH_CONTROL_FLOW
  session->controls = reinterpret_cast<ControlThunk*>(block + controls_at);
  session->num_controls = model->num_controls;
#endif

  if (arena == nullptr) {
    const size_t rounded = model->arena_rounded_size;
    arena = allocator.alloc(allocator.self, rounded, model->arena_alignment);
    if (arena == nullptr) {
      allocator.free(allocator.self, block);
      return NANORT_FAIL(status, NANORT_OUT_OF_MEMORY,
                         "allocator returned NULL for an arena of %llu bytes",
                         static_cast<unsigned long long>(rounded));
    }
    session->owned_arena = arena;
  }
  session->arena = static_cast<uint8_t*>(arena);

  SlotBinder binder{session, model, buffers, 0, 0};
#if NANORT_WITH_CONTROL_FLOW
  // Without control flow, pre-order is the entry's order: the same tables.
  Flattener flattener{binder, 0, 0};
  flattener.Sequence(thunks);
#else
  for (size_t t = 0; t < num_thunks; ++t) {
    BindThunk(*thunks->Get(static_cast<flatbuffers::uoffset_t>(t)), session->thunks[t], binder);
  }
#endif

#if NANORT_WITH_CUDA
  if (model->gpu != nullptr) {
    const nanort_status_code code = model->gpu_offload->create_session(
        *model, session->thunks, allocator, &session->gpu, status);
    if (code != NANORT_OK) {
      session->gpu = nullptr;
      nanort_session_release(session);
      return code;
    }
  }
#endif

  *out_session = session;
  return SetOk(status);
}

#if NANORT_WITH_THREADS
// Called by nanort_session_create_with_options (session_options.cc, its own
// object file, so that only a program calling it links the pool and the C
// library's threads).
void nanort::SessionEnableSplit(nanort_session* session, nanort_parallel_for_fn parallel_for,
                                void* pool_user_data, uint32_t num_chunks, ThreadPool* own_pool,
                                void (*destroy_pool)(ThreadPool* pool), uint8_t* chunk_scratch) {
  session->chunk_scratch = chunk_scratch;
  session->parallel_for = parallel_for;
  session->pool_user_data = pool_user_data;
  session->own_pool = own_pool;
  session->destroy_pool = destroy_pool;
  session->num_chunks = num_chunks;
  session->run_split = RunThunksSplit;
}
#endif

extern "C" void nanort_session_release(nanort_session* session) {
  if (session == nullptr) return;
  const nanort_allocator allocator = session->allocator;
#if NANORT_WITH_CUDA
  if (session->gpu != nullptr) {
    session->model->gpu_offload->release_session(*session->model, session->gpu, allocator);
  }
#endif
#if NANORT_WITH_THREADS
  if (session->own_pool != nullptr) session->destroy_pool(session->own_pool);
  if (session->chunk_scratch != nullptr) allocator.free(allocator.self, session->chunk_scratch);
#endif
  if (session->owned_arena != nullptr) allocator.free(allocator.self, session->owned_arena);
  allocator.free(allocator.self, session);
}

namespace {

// nanort_run, and nanort_run_with_memory once it has checked the memory
// kinds (input_memory / output_memory NULL: all on the host; only GPU
// sessions read them). Inlined into both where there is a GPU offload, into
// nanort_run alone elsewhere, so that it stays as it was where every byte
// counts.
__attribute__((always_inline)) inline nanort_status_code Run(
    nanort_session* session, const nanort_tensor* inputs, const nanort_memory* input_memory,
    size_t num_inputs, const nanort_tensor* outputs, const nanort_memory* output_memory,
    size_t num_outputs, nanort_status* status) {
#if !NANORT_WITH_CUDA
  (void)input_memory, (void)output_memory;
#endif
  NANORT_CHECK_OR_RETURN(session != nullptr, status, NANORT_INVALID_ARGUMENT, "session is NULL");
  const nanort_model& model = *session->model;
  NANORT_CHECK_OR_RETURN(num_inputs == model.num_inputs, status, NANORT_INVALID_ARGUMENT,
                         "%zu inputs given, model takes %zu", num_inputs, model.num_inputs);
  NANORT_CHECK_OR_RETURN(num_outputs == model.num_outputs, status, NANORT_INVALID_ARGUMENT,
                         "%zu outputs given, model gives %zu", num_outputs, model.num_outputs);
  NANORT_CHECK_OR_RETURN(num_inputs == 0 || inputs != nullptr, status, NANORT_INVALID_ARGUMENT,
                         "inputs is NULL");
  NANORT_CHECK_OR_RETURN(num_outputs == 0 || outputs != nullptr, status, NANORT_INVALID_ARGUMENT,
                         "outputs is NULL");
  for (size_t i = 0; i < num_inputs; ++i) {
    NANORT_RETURN_IF_ERROR(CheckTensor(inputs[i], model.inputs[i], "input", status));
  }
  for (size_t o = 0; o < num_outputs; ++o) {
    const nanort_tensor_info& info = model.outputs[o];
    NANORT_RETURN_IF_ERROR(CheckTensor(outputs[o], info, "output", status));
    // Outputs are written while inputs and other outputs are read, so they
    // must not share bytes with anything; inputs may share with each other.
    for (size_t i = 0; i < num_inputs; ++i) {
      NANORT_CHECK_OR_RETURN(
          !Overlap(outputs[o].data, static_cast<size_t>(info.size_bytes), inputs[i].data,
                   static_cast<size_t>(model.inputs[i].size_bytes)),
          status, NANORT_INVALID_ARGUMENT, "output '%s' overlaps input '%s'", info.name,
          model.inputs[i].name);
    }
    for (size_t p = 0; p < o; ++p) {
      NANORT_CHECK_OR_RETURN(
          !Overlap(outputs[o].data, static_cast<size_t>(info.size_bytes), outputs[p].data,
                   static_cast<size_t>(model.outputs[p].size_bytes)),
          status, NANORT_INVALID_ARGUMENT, "output '%s' overlaps output '%s'", info.name,
          model.outputs[p].name);
    }
  }

  for (size_t p = 0; p < session->num_patches; ++p) {
    const TensorPatch& patch = session->patches[p];
    void* data = patch.tensor < num_inputs ? inputs[patch.tensor].data
                                           : outputs[patch.tensor - num_inputs].data;
    // A NULL tensor has 0 bytes, so every buffer in it is empty.
    session->slots[patch.slot] =
        data != nullptr ? static_cast<uint8_t*>(data) + patch.offset : nullptr;
  }
#if NANORT_WITH_CONTROL_FLOW
  // The verifier refused control flow in GPU programs.
  if (session->num_controls != 0) return RunControlFlow(*session, status);
#endif
#if NANORT_WITH_CUDA
  if (session->gpu != nullptr) {
    const RunMemory memory{inputs, input_memory, outputs, output_memory};
    return model.gpu_offload->run(model, session->gpu, *session, memory, RunHostThunk, ObserveThunk,
                                  status);
  }
#endif
#if NANORT_WITH_THREADS
  if (session->run_split != nullptr) {
    session->run_split(*session);
    return SetOk(status);
  }
#endif
#if NANORT_WITH_THUNK_OBSERVER
  if (session->observer != nullptr) {
    RunThunksObserved(*session);
    return SetOk(status);
  }
#endif
  for (size_t t = 0; t < session->num_thunks; ++t) RunThunk(session->thunks[t]);
  return SetOk(status);
}

// Every memory kind in kinds[0 .. count) is one nanort knows, and CUDA
// memory only where the session runs a GPU.
nanort_status_code CheckMemoryKinds(const nanort_session& session, const nanort_memory* kinds,
                                    size_t count, const nanort_tensor_info* infos, const char* what,
                                    nanort_status* status) {
  for (size_t i = 0; kinds != nullptr && i < count; ++i) {
    NANORT_CHECK_OR_RETURN(kinds[i] == NANORT_MEMORY_HOST || kinds[i] == NANORT_MEMORY_CUDA, status,
                           NANORT_INVALID_ARGUMENT, "%s '%s': unknown memory kind %d", what,
                           infos[i].name, static_cast<int>(kinds[i]));
#if NANORT_WITH_CUDA
    const bool gpu = session.gpu != nullptr;
    const char* why = "";
#else
    const bool gpu = false;
    const char* why = " (nanort built without NANORT_WITH_CUDA)";
    (void)session;
#endif
    NANORT_CHECK_OR_RETURN(kinds[i] == NANORT_MEMORY_HOST || gpu, status, NANORT_INVALID_ARGUMENT,
                           "%s '%s' is in CUDA memory, but this model runs nothing on a GPU%s",
                           what, infos[i].name, why);
  }
  return NANORT_OK;
}

}  // namespace

extern "C" nanort_status_code nanort_run(nanort_session* session, const nanort_tensor* inputs,
                                         size_t num_inputs, const nanort_tensor* outputs,
                                         size_t num_outputs, nanort_status* status) {
  return Run(session, inputs, nullptr, num_inputs, outputs, nullptr, num_outputs, status);
}

extern "C" nanort_status_code nanort_run_with_memory(
    nanort_session* session, const nanort_tensor* inputs, const nanort_memory* input_memory,
    size_t num_inputs, const nanort_tensor* outputs, const nanort_memory* output_memory,
    size_t num_outputs, nanort_status* status) {
  if (session != nullptr) {
    const nanort_model& model = *session->model;
    NANORT_RETURN_IF_ERROR(CheckMemoryKinds(
        *session, input_memory, num_inputs < model.num_inputs ? num_inputs : model.num_inputs,
        model.inputs, "input", status));
    NANORT_RETURN_IF_ERROR(CheckMemoryKinds(
        *session, output_memory, num_outputs < model.num_outputs ? num_outputs : model.num_outputs,
        model.outputs, "output", status));
  }
#if NANORT_WITH_CUDA
  return Run(session, inputs, input_memory, num_inputs, outputs, output_memory, num_outputs,
             status);
#else
  // Everything is on the host (checked above): one copy of the run's code.
  return nanort_run(session, inputs, num_inputs, outputs, num_outputs, status);
#endif
}

extern "C" nanort_status_code nanort_session_set_thunk_observer(nanort_session* session,
                                                                nanort_thunk_observer observer,
                                                                void* user_data,
                                                                nanort_status* status) {
  NANORT_CHECK_OR_RETURN(session != nullptr, status, NANORT_INVALID_ARGUMENT, "session is NULL");
#if NANORT_WITH_THUNK_OBSERVER
  session->observer = observer;
  session->observer_data = observer != nullptr ? user_data : nullptr;
  return SetOk(status);
#else
  (void)observer;
  (void)user_data;
  return NANORT_FAIL(status, NANORT_UNAVAILABLE,
                     "this nanort was built without thunk observers "
                     "(NANORT_WITH_THUNK_OBSERVER=OFF)");
#endif
}
