// The natural logarithm as straight-line f32 IR (scalar or vector types), for
// the lowerings that need it (LogSoftmax, LRN's power): no libm call, so loops
// that use it vectorize and kernels link on bare metal.
#pragma once

#include <llvm/IR/IRBuilder.h>

namespace nanoc::cpu {

// ln(x), within a few ulp over the whole f32 range, subnormals included:
// -inf for 0, NaN for x < 0 and NaN, +inf for +inf.
llvm::Value* emitLog(llvm::IRBuilder<>& b, llvm::Value* x);

// x^y for x > 0 as e^(y ln x); NaN for x < 0, as the lowerings that use it
// (LRN) only raise positive bases.
llvm::Value* emitPowPositive(llvm::IRBuilder<>& b, llvm::Value* x, llvm::Value* y);

}  // namespace nanoc::cpu
