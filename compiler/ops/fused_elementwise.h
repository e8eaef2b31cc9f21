// nanoc.Elementwise: a chain of f32 elementwise ops (ops/elementwise_table.h)
// fused into one node by passes/fuse_elementwise.h, so that the chain is one
// loop over the output with its intermediates in registers (GELU's Div, Erf,
// Add, Mul, Mul: one pass over memory instead of five).
//
//   nanoc.Elementwise(X0, X1, ...) {ops, arity, operands, s<i>.<attr>...} -> Y
//
// Step i applies the table op ops[i] ("Div,Erf,Add": names joined by commas)
// to arity[i] operands, taken in order from `operands`: r >= 0 is input r,
// r < 0 the result of step -r - 1 (an earlier step). Step i's attributes are
// the node's attributes "s<i>.<name>" (LeakyRelu's alpha as "s2.alpha").
// The last step's result is Y. Every input and every result is f32; inputs
// broadcast numpy-style to Y's shape, which every intermediate has. Each step
// rounds to f32, as the unfused ops did, so the fused node computes exactly
// what the chain did.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ops/elementwise_table.h"

namespace nanoc {

// The most steps and inputs a fused node takes.
constexpr size_t kMaxElementwiseSteps = 32, kMaxElementwiseInputs = 16;

struct ElementwiseProgram {
  struct Step {
    const ElementwiseOp* op = nullptr;
    std::vector<int64_t> operands;  // r >= 0: input r; r < 0: step -r - 1
    // A node of the op with the step's attributes, whose inputs are the
    // fused node's inputs or, for a step's result, `results[s]`: what the
    // op's scalar reference and emitter read.
    std::unique_ptr<Node> node;
  };
  std::vector<Step> steps;
  std::vector<std::unique_ptr<Value>> results;  // one per step, Y's type
};

// Decodes and checks a nanoc.Elementwise node (failing naming it): known
// fusable ops, arities within each op's, operands in range and earlier,
// f32 everywhere, at most kMaxElementwiseSteps steps. y: the node's result
// type (every step's).
ElementwiseProgram decodeElementwise(const Node& node, const TensorType& y);

// Whether a table op can be a step: it takes f32 operands (Pow's exponent
// included) to an f32 result (not Where, Cast, the comparisons or logic).
bool fusableElementwise(const ElementwiseOp& op);

}  // namespace nanoc
