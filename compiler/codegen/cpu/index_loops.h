// What the data-movement lowerings share: elements moved as raw integers of
// their size, index operands loaded and made safe with the run-time policy of
// compiler/ops/data_movement.h (negative from the end, then clamped), a loop
// over a tensor's elements by multi-index in row tasks, and the strided copy
// that Slice, Expand and Transpose are.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "compiler/codegen/cpu/lowering.h"
#include "compiler/codegen/cpu/row_tasks.h"

namespace nanoc::cpu {

// iN with N = 8 * element size: the type data-movement kernels copy with.
llvm::Type* bitsType(llvm::IRBuilder<>& b, DType dtype);
// The byte address of element `index` (i64) of a buffer of `dtype`.
llvm::Value* bitsPtr(llvm::IRBuilder<>& b, DType dtype, llvm::Value* base, llvm::Value* index);

// Element `index` of an integer buffer of `dtype`, widened to i64 (signed
// types sign-extended, unsigned zero-extended).
llvm::Value* loadIndex(llvm::IRBuilder<>& b, DType dtype, llvm::Value* base, llvm::Value* index);
// clampIndex of data_movement.h: index + dim where negative, then clamped to
// [0, dim - 1]; dim >= 1.
llvm::Value* emitClampIndex(llvm::IRBuilder<>& b, llvm::Value* index, int64_t dim);

// Emits the loop over the elements of a tensor of `dims` that tasks
// [kb.task_begin, kb.task_end) own, with `tasks` from elementTasks(dims):
// body(index, linear) gets the multi-index (i64 values, one per dim) and the
// row-major linear index.
RowTasks elementTasks(const std::vector<int64_t>& dims);
void emitElementTasks(
    KernelBuilder& kb, const std::vector<int64_t>& dims,
    const std::function<void(const std::vector<llvm::Value*>& index, llvm::Value* linear)>& body);

// Copies elements [begin, end) of a contiguous run: dst[dst_at + i] =
// src[src_at + i]. Runs of `run_elements` (the static row length) that are
// long enough become one memcpy; short ones an element loop, which the
// vectorizer handles better than a call per run.
void emitCopyRun(llvm::IRBuilder<>& b, DType dtype, llvm::Value* dst, llvm::Value* dst_at,
                 llvm::Value* src, llvm::Value* src_at, llvm::Value* begin, llvm::Value* end,
                 int64_t run_elements);

// A strided copy out[i] = in[base + sum_d index_d * strides[d]] over an
// output of `dims`, simplified first: size-1 dims dropped, and dims that
// continue each other in the input merged.
struct StridedCopy {
  std::vector<int64_t> dims;
  std::vector<int64_t> strides;
  int64_t base = 0;
  RowTasks tasks;
};
StridedCopy simplifyStridedCopy(const std::vector<int64_t>& dims,
                                const std::vector<int64_t>& strides, int64_t base);
// Emits the copy between kb.input(0) and kb.output(0) of elements of `dtype`.
void emitStridedCopy(KernelBuilder& kb, DType dtype, const StridedCopy& copy);

}  // namespace nanoc::cpu
