// The program flatbuffer's framing check, driven by a compact description of
// schema/program.fbs instead of flatc's generated Verify functions.
//
// flatc generates one Verify function per table, each an inlined chain of
// flatbuffers::Verifier templates; for this schema that was about 2.5 KB of
// code on Cortex-M4, a quarter of the runtime. Here each table is a row of
// one-byte field descriptors walked by one function, and the rules are
// flatbuffers 2.0.8's Verifier, rule for rule (bounds, alignment relative to
// the buffer, vtable size, string terminators, vector lengths, the 1,000,000
// table limit), so it accepts exactly the buffers the generated
// VerifyProgramBuffer accepts. Two tests hold that: one compares the
// descriptors with the schema's reflection data (flatc --bfbs), the other
// runs both verifiers on many damaged programs and requires equal answers.
#ifndef NANORT_SRC_PROGRAM_SCHEMA_H_
#define NANORT_SRC_PROGRAM_SCHEMA_H_

#include <stddef.h>
#include <stdint.h>

namespace nanort::schema {

// The tables of program.fbs. Format 1.3's GPU tables (and Program's gpu and
// gpu_target fields) only in builds with GPU offload (NANORT_WITH_CUDA):
// without it nanort reads programs as a format 1.2 runtime does, skipping
// those fields as flatbuffers' generated code skips fields newer than its
// schema, and refuses a program with a GPU module by its vtable entry alone
// (program_verifier.cc). Format 1.4's IfThunk and LoopThunk only with
// control flow (NANORT_WITH_CONTROL_FLOW). The ThunkKind union's members must
// stay consecutive table ids, so the GPU thunk kinds come in with either: a
// build with control flow but no GPU offload verifies them and CheckThunks
// refuses them. The bare-metal core (neither) keeps its bytes.
#if defined(NANORT_WITH_CUDA) && NANORT_WITH_CUDA
#define NANORT_SCHEMA_GPU 1
#else
#define NANORT_SCHEMA_GPU 0
#endif
#if defined(NANORT_WITH_CONTROL_FLOW) && NANORT_WITH_CONTROL_FLOW
#define NANORT_SCHEMA_CONTROL_FLOW 1
#else
#define NANORT_SCHEMA_CONTROL_FLOW 0
#endif
#define NANORT_SCHEMA_GPU_THUNKS (NANORT_SCHEMA_GPU || NANORT_SCHEMA_CONTROL_FLOW)
// Every table and field of program.fbs (what the reflection tests compare).
#define NANORT_SCHEMA_FULL (NANORT_SCHEMA_GPU && NANORT_SCHEMA_CONTROL_FLOW)
enum TableId : uint8_t {
  kProgram,
  kTarget,
  kBuffer,
  kKernelThunk,
  kCopyThunk,
#if NANORT_SCHEMA_GPU_THUNKS
  kGpuLaunchThunk,  // the union's members stay consecutive (kUnion below)
  kGpuCopyThunk,
#endif
#if NANORT_SCHEMA_CONTROL_FLOW
  kIfThunk,
  kLoopThunk,
#endif
  kThunk,
  kTensor,
  kEntry,
  kKernel,
#if NANORT_SCHEMA_GPU
  kGpuImage,
  kGpuKernel,
  kGpuModule,
#endif
  kTableCount
};
// A descriptor holds a table id in 4 bits: 16 tables at most (the full
// schema has exactly 16).
static_assert(kTableCount <= 16, "a table id must fit a descriptor's high nibble");

// A field descriptor: the kind in the low 4 bits, a table id in the high 4
// (the element table for kTable/kVecTable; for kUnion, the table of the
// union's first member, the others following in order, with the member
// count in kUnionMembers).
enum FieldKind : uint8_t {
  kU8,         // 1-byte scalar or enum (a union's type field too)
  kU32,        // 4-byte scalar
  kU64,        // 8-byte scalar
  kString,     // string
  kVec4,       // vector of 4-byte scalars
  kVec8,       // vector of 8-byte scalars
  kVecString,  // vector of strings
  kTable,      // table
  kVecTable,   // vector of tables
  kUnion,      // union value; its type is the field before it
  kVec1,       // vector of 1-byte scalars (GpuImage.data)
};
// ThunkKind: KernelThunk, CopyThunk (, GpuLaunchThunk, GpuCopyThunk
// (, IfThunk, LoopThunk))
constexpr uint8_t kUnionMembers = NANORT_SCHEMA_CONTROL_FLOW ? 6 : NANORT_SCHEMA_GPU ? 4 : 2;

// flatbuffers::Verifier's depth limit: tables nested at most 64 deep (the
// root is at depth 1). IfThunk and LoopThunk nest thunk sequences, so this
// schema reaches it (Program, Entry, Thunk, then two levels per nesting).
constexpr uint32_t kMaxTableDepth = 64;

// Table `table`'s field descriptors in field-id order (vtable slot i is at
// byte 4 + 2 * i), and how many.
const uint8_t* TableFields(TableId table, size_t* count);

// The root table's first two fields, read on the way.
struct FormatVersion {
  uint32_t major = 0, minor = 0;
  // Whether the framing they need (buffer, root table, the two fields)
  // verified, so that a program of a newer major version is recognised even
  // when the rest no longer verifies against this schema. Absent fields are 0.
  bool read = false;
  // Whether the walk stopped because the buffer shares tables or vectors
  // (see VerifyProgramFlatbuffer's `budget`).
  bool shared = false;
};

// True when `bytes[0..size)` (size < 2^31) is a well-formed Program
// flatbuffer with identifier "NRTP", by flatbuffers' rules. `bytes` needs no
// alignment: alignment is checked relative to the buffer, as flatbuffers
// does; callers that read scalars in place align the buffer themselves.
// `version`, when given, receives the format version, whatever the answer.
//
// `budget` adds one rule to flatbuffers': the walk charges every table it
// reaches 4 bytes (its vtable offset) and every vector 4 bytes plus its
// elements, and refuses the buffer (setting version->shared) when the charges
// exceed `budget`. nanort passes the buffer's size. Distinct tables and
// vectors occupy distinct bytes, so a buffer in which none is reached twice
// (what FlatBufferBuilder writes: it shares only vtables and, on request,
// strings, which are not charged) always passes; a buffer that names one
// table or vector from many places, which could make the walk and everything
// sized by it (dims, thunk arguments, thunks) grow with the square of its
// size or worse, fails. It bounds the walk's time, and each count the
// runtime allocates by, linearly in `size`. SIZE_MAX (flatbuffers' answer
// exactly) is for tests.
bool VerifyProgramFlatbuffer(const uint8_t* bytes, size_t size, FormatVersion* version,
                             size_t budget);

}  // namespace nanort::schema

#endif  // NANORT_SRC_PROGRAM_SCHEMA_H_
