// Small IRBuilder helpers shared by the lowerings: counted loops and typed
// element access over the dense row-major buffers of a kernel.
#pragma once

#include <llvm/IR/IRBuilder.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "compiler/ir/dtype.h"

namespace nanoc::cpu {

// Emits `for (i = begin; i < end; ++i) body(i)` with i64 bounds. The body is
// emitted with the builder inside the loop; on return the builder sits in the
// loop's exit block. Empty ranges run the body zero times.
// Hints for LLVM's loop vectorizer on the loop, as loop metadata:
//   FoldTail: cover the iterations past the last whole vector step with
//     masked operations in the vector loop instead of a scalar remainder.
//   NoVectorize: leave this loop alone (an outer loop whose inner loop LLVM
//     unrolls away, which it would otherwise vectorize with gathers and
//     scatters across rows: a 7 x 7 plane's 49 columns per row, 20x slower
//     than the rows one after the other).
//   NoUnroll: NoVectorize, and LLVM's unroller keeps the loop rolled too
//     (a few iterations of a large body, whose loads the machine scheduler
//     would otherwise hoist across the iterations).
enum class LoopHint { None, FoldTail, NoVectorize, NoUnroll };

void emitLoop(llvm::IRBuilder<>& b, llvm::Value* begin, llvm::Value* end,
              const std::function<void(llvm::Value* i)>& body, const char* name = "i",
              LoopHint hint = LoopHint::None);
inline void emitLoop(llvm::IRBuilder<>& b, int64_t begin, int64_t end,
                     const std::function<void(llvm::Value* i)>& body, const char* name = "i") {
  emitLoop(b, b.getInt64(begin), b.getInt64(end), body, name);
}

// if (cond) then(); with the builder after it. The GPU lowerings use it too.
void emitIf(llvm::IRBuilder<>& b, llvm::Value* cond, const std::function<void()>& then,
            const char* name = "if");

// Emits a loop carrying values: acc = init; for i in [begin, end): acc =
// body(i, acc). Returns the final values, usable after the loop (init where
// the loop runs no iteration). The body may create blocks of its own.
std::vector<llvm::Value*> emitCarriedLoop(
    llvm::IRBuilder<>& b, llvm::Value* begin, llvm::Value* end,
    const std::vector<llvm::Value*>& init,
    const std::function<std::vector<llvm::Value*>(llvm::Value* i,
                                                  const std::vector<llvm::Value*>& acc)>& body,
    const char* name = "r", LoopHint hint = LoopHint::None);

// The same carrying one value (or none: init null, body's result unused).
llvm::Value* emitReduction(
    llvm::IRBuilder<>& b, llvm::Value* begin, llvm::Value* end, llvm::Value* init,
    const std::function<llvm::Value*(llvm::Value* i, llvm::Value* acc)>& body,
    const char* name = "r", LoopHint hint = LoopHint::None);

// Address of element `index` (i64) of an f32 buffer, and load/store of it.
llvm::Value* f32Ptr(llvm::IRBuilder<>& b, llvm::Value* base, llvm::Value* index);
llvm::Value* loadF32(llvm::IRBuilder<>& b, llvm::Value* base, llvm::Value* index);
void storeF32(llvm::IRBuilder<>& b, llvm::Value* value, llvm::Value* base, llvm::Value* index);
// The input position a transposed window reads along one axis (Col2Im's
// block position, ConvTranspose's input pixel): `index` = l with l * stride
// = pos + pad - k * dilation, and `valid`, whether that l exists: the sum
// non-negative, a multiple of stride (at stride 1 always) and l < extent.
// Where not valid, index is some l in [0, pos + pad] (0 where the sum is
// negative), safe to compute an address from but not to read.
struct WindowSource {
  llvm::Value* index;
  llvm::Value* valid;
};
WindowSource emitWindowSource(llvm::IRBuilder<>& b, llvm::Value* pos, llvm::Value* k, int64_t pad,
                              int64_t dilation, int64_t stride, int64_t extent);

// Prefetch of element `index` into the data cache, for reading or (write) for
// writing, at `locality` (llvm.prefetch's: 3 keeps it closest, in L1 on x86;
// 2 brings it to L2).
void prefetchF32(llvm::IRBuilder<>& b, llvm::Value* base, llvm::Value* index, bool write = false,
                 int locality = 3);

// Any dtype, in its storage type: f16 as half, bf16 as bfloat, bool as i8
// (0 or 1), unsigned ints as the same-width iN.
llvm::Type* storageType(llvm::LLVMContext& ctx, DType dtype);
llvm::Value* elementPtr(llvm::IRBuilder<>& b, DType dtype, llvm::Value* base, llvm::Value* index);
llvm::Value* loadElement(llvm::IRBuilder<>& b, DType dtype, llvm::Value* base, llvm::Value* index);
void storeElement(llvm::IRBuilder<>& b, DType dtype, llvm::Value* value, llvm::Value* base,
                  llvm::Value* index);

// The type arithmetic on `dtype` is done in: f32 for f16, bf16, the float8
// types, f4e2m1 and f32 (so a half-precision model computes like ONNX
// Runtime's reference kernels and rounds once on store), f64 for f64, i8 for
// the sub-byte ints (their value: I4 and I2 sign-extended), the storage type
// for the rest.
bool isFloat(DType dtype);   // computes in a float type (float8, f4e2m1 included)
bool isSigned(DType dtype);  // signed integers (i8 .. i64, i4, i2)
llvm::Type* computeType(llvm::LLVMContext& ctx, DType dtype);
// Loads element `index` and widens it to computeType(dtype).
llvm::Value* loadCompute(llvm::IRBuilder<>& b, DType dtype, llvm::Value* base, llvm::Value* index);
// Narrows a computeType(dtype) value to storage and stores it (bool: != 0;
// float8 rounds to nearest even and, past its range, saturates to its largest
// finite value or, with `saturate` false, gives inf or NaN as ONNX's Cast;
// f4e2m1 rounds to nearest even and saturates; a sub-byte int keeps its low
// bits).
void storeCompute(llvm::IRBuilder<>& b, DType dtype, llvm::Value* value, llvm::Value* base,
                  llvm::Value* index, bool saturate = true);
// Converts between compute types: float<->float by extension or rounding,
// float->int by truncation toward zero (saturating, NaN -> 0), int->float by
// value, int->int by sign- or zero-extension or truncation, anything->bool as
// != 0; to a sub-byte int, float truncates toward zero (saturating to i64)
// and every value then wraps to the type's width.
llvm::Value* convertCompute(llvm::IRBuilder<>& b, llvm::Value* value, DType from, DType to);

}  // namespace nanoc::cpu
