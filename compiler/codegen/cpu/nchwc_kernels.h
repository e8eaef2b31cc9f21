// The kernels of nanoc.ConvNCHWc (ops/nchwc.h) other than the pointwise form
// (which is the packed product of gemm_microkernel.h with a channel-blocked A
// and Y, in lower_nchwc.cc): one task of the depthwise and of the direct
// form. x, w, bias (null without one), y and the epilogue's residual are the
// node's buffers; `t` is the task, in [0, ...Tasks(s)).
#pragma once

#include <llvm/IR/IRBuilder.h>

#include <algorithm>
#include <cstdint>
#include <utility>

#include "compiler/codegen/cpu/epilogue.h"
#include "compiler/ops/nchwc.h"

namespace nanoc::cpu {

// The outputs [lo, hi) along one axis (`out` of them, stride `stride`,
// `pad` positions of padding before the input) whose window of `extent`
// input positions (the dilated kernel) lies inside the input's `in`:
// o * stride - pad >= 0 and o * stride - pad + extent <= in; empty (lo ==
// hi) where none does.
inline std::pair<int64_t, int64_t> windowsInside(int64_t in, int64_t extent, int64_t stride,
                                                 int64_t pad, int64_t out) {
  const int64_t lo = std::min(out, (pad + stride - 1) / stride);
  const int64_t limit = in - extent + pad;
  const int64_t hi = limit < 0 ? 0 : limit / stride + 1;
  return {lo, std::clamp(hi, lo, out)};
}

uint64_t nchwcDepthwiseTasks(const ConvNchwcShape& s);
void emitNchwcDepthwiseTask(llvm::IRBuilder<>& b, const ConvNchwcShape& s, llvm::Value* x,
                            llvm::Value* w, llvm::Value* bias, llvm::Value* y,
                            const FusedEpilogue& epilogue, llvm::Value* t);

uint64_t nchwcDirectTasks(const ConvNchwcShape& s);
// next_weights: the next kernel's weights (KernelBuilder::next_weights), for
// the last blocks to prefetch where the direct loop prefetches the next
// blocks' weights; null: none.
void emitNchwcDirectTask(llvm::IRBuilder<>& b, const ConvNchwcShape& s, llvm::Value* x,
                         llvm::Value* w, llvm::Value* bias, llvm::Value* y,
                         const FusedEpilogue& epilogue, llvm::Value* t,
                         llvm::Value* next_weights = nullptr, int64_t next_weights_bytes = 0);

}  // namespace nanoc::cpu
