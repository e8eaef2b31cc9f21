// Program verification: nothing in a program is trusted because it parsed.
// After VerifyProgram succeeds, every buffer is a slice inside the constants
// blob, the arena or one of the entry's tensors; the arena is exactly what
// its buffers need; every kernel index is bound and every kernel thunk
// matches the signature its kernel was compiled for (the object's kernel
// table: argument count, outputs, each argument's bytes, task count); every
// thunk reads only bytes an earlier thunk wrote (or inputs/constants); and
// every output is written. Sessions and run rely on these facts for memory
// safety and do not check them again. docs/SAFETY.md has the whole list and
// the time and memory bounds.
#ifndef NANORT_SRC_PROGRAM_VERIFIER_H_
#define NANORT_SRC_PROGRAM_VERIFIER_H_

#include <stdint.h>

#include "nanort/nanort.h"
#include "program_generated.h"

namespace nanort {

// Whether this nanort offloads to NVIDIA GPUs (format 1.3's GPU module,
// device buffers and GPU thunks); without it, a program that has any of them
// is refused with NANORT_UNAVAILABLE.
#if defined(NANORT_WITH_CUDA) && NANORT_WITH_CUDA
constexpr bool kWithCuda = true;
#else
constexpr bool kWithCuda = false;
#endif

// Whether this nanort runs format 1.4's run-time control flow (IfThunk,
// LoopThunk); without it, a program that has any is refused with
// NANORT_UNAVAILABLE.
#if defined(NANORT_WITH_CONTROL_FLOW) && NANORT_WITH_CONTROL_FLOW
constexpr bool kWithControlFlow = true;
#else
constexpr bool kWithControlFlow = false;
#endif
// How deep control flow may nest: the entry's thunks are level 0, an If's
// branches or a Loop's body one level below the thunk that holds them, and
// no sequence is deeper than this. It bounds the verifier's and the run's
// recursion and the verifier's definedness snapshots (one per level).
constexpr uint32_t kMaxControlDepth = 8;

// Bounds of a GPU module that no real program comes near, so that a hostile
// one cannot make load or session creation work or allocate without bound.
constexpr uint32_t kMaxGpuImages = 64;
constexpr uint64_t kMaxGpuImageBytes = uint64_t{1} << 30;
constexpr uint32_t kMaxGpuKernelArgs = 512;  // 8-byte pointers in the driver's 4 KB of params
constexpr uint32_t kMaxGpuKernelNameLength = 255;
constexpr uint32_t kMaxGpuSharedBytes = 256 * 1024;
// Device buffers' alignment: at most what cuMemAlloc guarantees.
constexpr uint32_t kMaxDeviceAlignment = 256;

// Checks the flatbuffer framing of `bytes` (identifier, format version, then
// every table, vector and string by flatbuffers' rules: program_schema.h). `bytes` must be aligned
// to kProgramAlignment. On success *out_program is the verified root table.
nanort_status_code VerifyProgramBuffer(const uint8_t* bytes, uint64_t size,
                                       const fb::Program** out_program, nanort_status* status);

// The alignment at which a program's scalars (up to 8 bytes) can be read in
// place: the verifier checks alignment relative to the buffer.
constexpr uint64_t kProgramAlignment = 8;

// The largest arena alignment a program may ask for (nanoc asks for 64).
constexpr uint32_t kMaxArenaAlignment = 4096;
// The most arena bytes a program may declare: no address space holds more
// (x86-64's and AArch64's 48-bit user space is 2^47 bytes), so load refuses a
// larger one rather than let session creation ask an allocator for it; half
// of SIZE_MAX on 32-bit targets.
constexpr uint64_t kMaxArenaBytes =
    sizeof(size_t) >= 8 ? uint64_t{1} << 47 : static_cast<uint64_t>(SIZE_MAX / 2);

// What the invariant checks count on their way, for load and session
// creation to size their tables by without walking the program again.
struct ProgramTotals {
  size_t dims = 0;                // dims of the entry's inputs and outputs together
  size_t slots = 0;               // thunk arguments, two per copy thunk
  size_t patches = 0;             // those of them in an input or output tensor
  size_t arena_rounded_size = 0;  // the arena (with scratch) rounded up to its alignment
  // Per-worker scratch (the most any kernel declares, 64-byte rounded) and
  // where worker 0's starts in the arena, after the program's buffers.
  size_t scratch_offset = 0;
  size_t scratch_size = 0;
#if NANORT_WITH_CONTROL_FLOW
  // Thunks at every nesting level (what sessions flatten), and how many of
  // them are IfThunks or LoopThunks. Slots and patches above count the
  // nested thunks' too, and each control thunk's condition, trip count and
  // counter buffers.
  size_t thunks = 0;
  size_t controls = 0;
#endif
};

// The most scratch a kernel may declare (nanort_kernel::scratch_bytes).
constexpr uint64_t kMaxScratchBytes = uint64_t{1} << 30;

// Checks the invariants of a framing-verified program against the def it came
// with. `allocator` provides scratch memory for the definedness analysis; it
// is freed before returning. On success *totals holds the counts above.
nanort_status_code VerifyProgramInvariants(const fb::Program& program, const nanort_model_def& def,
                                           nanort_allocator allocator, ProgramTotals* totals,
                                           nanort_status* status);

// Byte size of a tensor of `dtype` with the given dims, read from a possibly
// unaligned int64 vector. False when a dim is negative, the dtype unknown or
// the size exceeds SIZE_MAX (what this machine can address).
bool TensorByteSize(fb::DType dtype, const flatbuffers::Vector<int64_t>* shape, uint64_t* out_size);

}  // namespace nanort

#endif  // NANORT_SRC_PROGRAM_VERIFIER_H_
