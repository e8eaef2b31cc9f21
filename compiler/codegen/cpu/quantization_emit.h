// IR helpers the quantization lowerings share (lower_quantization*.cc).
#pragma once

#include <llvm/IR/IRBuilder.h>

#include "compiler/ir/dtype.h"
#include "compiler/ops/quantization.h"

namespace nanoc::cpu {

// Rounds a float `v` (f32 compute) to the precision of `dtype` and back: f16
// and bf16 round to nearest even; other dtypes leave it unchanged.
llvm::Value* roundToDType(llvm::IRBuilder<>& b, llvm::Value* v, DType dtype);

// Clamps an integer-valued float to `range` (NaN gives range.lo) and converts
// it to `out`'s storage type.
llvm::Value* emitSaturate(llvm::IRBuilder<>& b, llvm::Value* v, QuantRange range, DType out);

}  // namespace nanoc::cpu
