// The loaded model: a verified program plus what the accessors and sessions
// read from it, copied out of the flatbuffer where it may be misaligned.
#ifndef NANORT_SRC_MODEL_H_
#define NANORT_SRC_MODEL_H_

#include <stdint.h>

#include "gpu_offload.h"
#include "nanort/nanort.h"
#include "program_generated.h"

struct nanort_model {
  nanort_allocator allocator;
  // Copy of the caller's def: its pointers borrow the object's read-only data.
  nanort_model_def def;
  // The verified program: def.program, or `owned_program` when def.program
  // was not aligned enough to read the flatbuffer's scalars in place.
  const nanort::fb::Program* program;
  const nanort::fb::Entry* entry;
  void* owned_program;

  // The CPU variant in use (format 1.1 programs may carry several) and its
  // LLVM CPU name, which points into the program.
  uint32_t variant;
  const char* cpu;

  // The verifier proved the arena, rounded up to its alignment, fits in
  // SIZE_MAX / 2, so size_t holds both.
  size_t arena_size;
  size_t arena_rounded_size;
  uint32_t arena_alignment;
  // Per-worker scratch (nanort_kernel_args::scratch), 64-byte rounded, and
  // where worker 0's starts in the arena (arena_size = scratch_offset +
  // scratch_size when it is not 0).
  size_t scratch_offset;
  size_t scratch_size;

  // Entry signature; names point into the program, dims into this model's
  // allocation (the flatbuffer's int64 vectors need not be 8-byte aligned).
  nanort_tensor_info* inputs;
  size_t num_inputs;
  nanort_tensor_info* outputs;
  size_t num_outputs;

  // The session's table sizes, counted by the verifier (ProgramTotals).
  size_t num_slots;
  size_t num_patches;
#if NANORT_WITH_CONTROL_FLOW
  // Thunks at every nesting level (pre-order, as sessions flatten them),
  // and the IfThunks and LoopThunks among them; 0: the program has no
  // control flow and sessions run the entry's thunks as they are.
  size_t num_thunks;
  size_t num_controls;
#endif

  // GPU offload (format 1.3 programs with a GPU module): the table of the
  // CUDA code that loaded `gpu` (the driver, device and chosen image); both
  // NULL for a CPU-only program.
  const nanort_gpu_offload* gpu_offload;
  nanort::GpuModel* gpu;

  // Set by nanort_model_load_file: the shared object the def lives in, closed
  // after everything else at release.
  void* library;
  void (*close_library)(void* library);
};

#if NANORT_WITH_CONTROL_FLOW
namespace nanort {
// The thunk numbered `index` in pre-order over the entry's nested thunk
// sequences (the numbering of sessions, observers and messages), and its
// nesting level; NULL when there is none. Linear in `index`.
const fb::Thunk* ThunkInPreOrder(const nanort_model& model, size_t index, uint32_t* level);
}  // namespace nanort
#endif

#endif  // NANORT_SRC_MODEL_H_
