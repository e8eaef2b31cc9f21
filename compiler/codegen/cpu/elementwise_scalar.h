// The elementwise ops' scalar emitters (lower_elementwise.cc) and their
// broadcast layout, exported for the other lowerings that apply them per
// element (codegen/gpu's elementwise kernels): the same IR per element as
// the CPU's loops, so both compute the same values.
#pragma once

#include <llvm/IR/IRBuilder.h>

#include <cstdint>
#include <string_view>
#include <vector>

#include "compiler/ir/dtype.h"
#include "compiler/ir/graph.h"
#include "compiler/ops/fused_elementwise.h"

namespace nanoc::cpu {

// The output iteration space of an elementwise node after collapsing:
// dims[k], and per operand the element stride of each dim (0 where the
// operand is broadcast). The output is dense over dims (row-major); its
// element count is the product of dims (1 for a scalar; 0 for an empty one).
struct BroadcastLayout {
  std::vector<int64_t> dims;
  std::vector<std::vector<int64_t>> strides;  // [operand][dim]
};

// Throws CompileError naming the node when an input does not broadcast to
// the output.
BroadcastLayout collapseBroadcast(const Node& node);

// Whether the table op `op` has a scalar emitter (every table row has one).
bool hasElementwiseScalar(std::string_view op);

// The table op node.op's result for one element: `operands` in
// computeType(in[x]) (loops.h), the result in computeType(out) (a bool may be
// an i1); node gives the attributes (and Pow's constant exponent).
llvm::Value* emitElementwiseScalar(llvm::IRBuilder<>& b, const Node& node,
                                   const std::vector<DType>& in, DType out,
                                   const std::vector<llvm::Value*>& operands);

// nanoc.Elementwise's result (f32) for one element from its inputs' f32
// values: the steps' emitters in order, values in registers.
llvm::Value* emitFusedElementwiseScalar(llvm::IRBuilder<>& b, const Node& node,
                                        const ElementwiseProgram& program,
                                        const std::vector<llvm::Value*>& inputs);

}  // namespace nanoc::cpu
