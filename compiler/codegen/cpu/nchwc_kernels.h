// The kernels of nanoc.ConvNCHWc (ops/nchwc.h) other than the pointwise form
// (which is the packed product of gemm_microkernel.h with a channel-blocked A
// and Y, in lower_nchwc.cc): one task of the depthwise and of the direct
// form. x, w, bias (null without one), y and the epilogue's residual are the
// node's buffers; `t` is the task, in [0, ...Tasks(s)).
#pragma once

#include <llvm/IR/IRBuilder.h>

#include <cstdint>

#include "compiler/codegen/cpu/epilogue.h"
#include "compiler/ops/nchwc.h"

namespace nanoc::cpu {

uint64_t nchwcDepthwiseTasks(const ConvNchwcShape& s);
void emitNchwcDepthwiseTask(llvm::IRBuilder<>& b, const ConvNchwcShape& s, llvm::Value* x,
                            llvm::Value* w, llvm::Value* bias, llvm::Value* y,
                            const FusedEpilogue& epilogue, llvm::Value* t);

uint64_t nchwcDirectTasks(const ConvNchwcShape& s);
void emitNchwcDirectTask(llvm::IRBuilder<>& b, const ConvNchwcShape& s, llvm::Value* x,
                         llvm::Value* w, llvm::Value* bias, llvm::Value* y,
                         const FusedEpilogue& epilogue, llvm::Value* t);

}  // namespace nanoc::cpu
