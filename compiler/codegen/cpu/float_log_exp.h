// ln and exp as straight-line IR on f32 or f64 scalars (no libm), for the
// reduction family's LogSum, LogSumExp and the losses. f32 exp is emitExp.
#pragma once

#include <llvm/IR/IRBuilder.h>

namespace nanoc::cpu {

// ln(x): NaN below 0 and for NaN, -inf at 0, +inf at +inf; subnormals exact.
llvm::Value* emitLogAnyFloat(llvm::IRBuilder<>& b, llvm::Value* x);

// e^x: f32 through emitExp; f64 to about 1 ulp, +inf above ~709.78, 0 (through
// subnormals) below ~-745, NaN for NaN.
llvm::Value* emitExpAnyFloat(llvm::IRBuilder<>& b, llvm::Value* x);

}  // namespace nanoc::cpu
