// The fused epilogue (ops/epilogue.h) as IR: act(value + residual) on the
// value a kernel is about to store, in the value's own type (f32 or a vector
// of f32), so that a register tile's store or a vector loop stays vector.
// Lowerings call applyEpilogue from their store (the packed product's
// `epilogue` hook) or, when they accumulate in Y, emitEpilogueSweep over the
// outputs a task has just finished (still in cache).
#pragma once

#include <llvm/IR/IRBuilder.h>

#include <cstdint>

#include "compiler/codegen/cpu/gemm_microkernel.h"
#include "compiler/codegen/cpu/lowering.h"
#include "compiler/ops/epilogue.h"

namespace nanoc::cpu {

// The node's epilogue and its residual's pointer (null without one).
struct FusedEpilogue {
  EpilogueSpec spec;
  llvm::Value* residual = nullptr;
  bool empty() const { return spec.empty(); }
};
FusedEpilogue fusedEpilogue(const KernelBuilder& kb);

// act(x) for f32 or <N x f32> x.
llvm::Value* emitActivation(llvm::IRBuilder<>& b, const EpilogueSpec& spec, llvm::Value* x);

// act(value + residual[index .. index + lanes)) with the residual loaded as
// value's type (a masked load when lanes is less than its width; the other
// lanes are don't-care); residual null or spec without one: act(value).
llvm::Value* applyEpilogue(llvm::IRBuilder<>& b, const EpilogueSpec& spec, llvm::Value* value,
                           llvm::Value* residual, llvm::Value* index, int64_t lanes);

// Gives a packed product writing a row-major Y, its rows `row_stride` apart,
// the node's epilogue in its tile store (the tile's (i, j) is element
// i * row_stride + j of Y and of `residual`) and, with a residual, the
// prefetch of the residual's tile; nothing for an empty spec.
void setPackedEpilogue(llvm::IRBuilder<>& b, PackedProduct& p, const EpilogueSpec& spec,
                       llvm::Value* residual, int64_t row_stride);

// Prefetches residual[index] for reading (a no-op without a residual).
void prefetchResidual(llvm::IRBuilder<>& b, const EpilogueSpec& spec, llvm::Value* residual,
                      llvm::Value* index);

// y[i] = act(y[i] + residual[i]) for i in [begin, end), `width` lanes at a
// time (then one masked step), or one by one at width 1.
void emitEpilogueSweep(llvm::IRBuilder<>& b, const EpilogueSpec& spec, llvm::Value* y,
                       llvm::Value* residual, llvm::Value* begin, llvm::Value* end, int64_t width);

}  // namespace nanoc::cpu
