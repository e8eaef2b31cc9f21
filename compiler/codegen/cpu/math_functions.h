// Transcendental functions as straight-line f32 IR (scalar or vector types):
// no libm call, so loops that use them vectorize and kernels link on bare
// metal. Accuracy is a few ulp over the whole f32 range.
#pragma once

#include <llvm/IR/IRBuilder.h>

namespace nanoc::cpu {

// e^x. +inf above ~88.72, NaN for NaN; 0 below ln 2^-126 (~-87.34, where
// e^x is subnormal), and 2.4e-38 between that and -86.6: never subnormal.
llvm::Value* emitExp(llvm::IRBuilder<>& b, llvm::Value* x);

// 1 / (1 + e^-x), within 3.5 ulp; NaN for NaN. Below x = -87 it stays at
// 1.6e-38 rather than going subnormal.
llvm::Value* emitSigmoid(llvm::IRBuilder<>& b, llvm::Value* x);
// x * sigmoid(x) as x / (1 + e^-x): one rounding fewer, one operation fewer.
llvm::Value* emitSiLU(llvm::IRBuilder<>& b, llvm::Value* x);

// tanh(x) = sign(x) (1 - e) / (1 + e) with e = e^(-2|x|), which never
// overflows; near 0, where 1 - e cancels, an odd polynomial.
llvm::Value* emitTanh(llvm::IRBuilder<>& b, llvm::Value* x);

// ln(x): -inf at 0, NaN below 0 and for NaN, +inf at +inf; subnormals exact.
llvm::Value* emitLog(llvm::IRBuilder<>& b, llvm::Value* x);

// x^y for x > 0 as e^(y ln x); NaN for x < 0, as the lowerings that use it
// (LRN) only raise positive bases.
llvm::Value* emitPowPositive(llvm::IRBuilder<>& b, llvm::Value* x, llvm::Value* y);

// sin(x), cos(x) by Cody-Waite reduction to [-pi/4, pi/4] (accurate to a few
// ulp for |x| < 8192; beyond, the reduction loses precision).
llvm::Value* emitSin(llvm::IRBuilder<>& b, llvm::Value* x);
llvm::Value* emitCos(llvm::IRBuilder<>& b, llvm::Value* x);

// atan(x), and atan2-free asin/acos built on it.
llvm::Value* emitAtan(llvm::IRBuilder<>& b, llvm::Value* x);

// erf(x): a rational minimax approximation on [-4, 4], +-1 beyond.
llvm::Value* emitErf(llvm::IRBuilder<>& b, llvm::Value* x);

}  // namespace nanoc::cpu
