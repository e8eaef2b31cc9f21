// Transcendental functions as straight-line f32 IR (scalar or vector types):
// no libm call, so loops that use them vectorize and kernels link on bare
// metal. Accuracy is a few ulp over the whole f32 range.
#pragma once

#include <llvm/IR/IRBuilder.h>

namespace nanoc::cpu {

// e^x. +inf above ~88.72, NaN for NaN; results below ~2.3e-38 are flushed
// toward that bound's magnitude rather than made subnormal.
llvm::Value* emitExp(llvm::IRBuilder<>& b, llvm::Value* x);

// 1 / (1 + e^-x).
llvm::Value* emitSigmoid(llvm::IRBuilder<>& b, llvm::Value* x);

// tanh(x) = sign(x) (1 - e) / (1 + e) with e = e^(-2|x|), which never
// overflows; near 0, where 1 - e cancels, an odd polynomial.
llvm::Value* emitTanh(llvm::IRBuilder<>& b, llvm::Value* x);

}  // namespace nanoc::cpu
