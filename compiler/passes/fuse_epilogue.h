// Folds the elementwise tail of a matrix product or convolution into the node
// that produces it (the anchor: Conv, nanoc.ConvGemm, Gemm or MatMul with an
// f32 result), so that the tail costs no kernel and no pass over memory of
// its own: the anchor applies it before its one store (ops/epilogue.h).
//
//   anchor -> [Add(., R) | Add(R, .)] -> [activation]
//
// Before them, for a MatMul: an Add of a constant f32 row vector c ([N] or
// [1, ..., 1, N], either operand order) becomes the MatMul's bias, input 2
// (Y[..., i, j] += c[j] on the product rounded to f32, as the Add did).
// The optional residual Add takes a tensor R of the anchor's exact type (no
// broadcast) as the anchor's input 3; the optional activation is Relu, Clip
// with constant scalar bounds, LeakyRelu, Sigmoid, HardSigmoid, HardSwish,
// Tanh, or SiLU spelled Mul(x, Sigmoid(x)) (the Sigmoid read by that Mul
// only). Each fused intermediate must have exactly one use and must not be a
// graph output (x of SiLU: the Sigmoid and the Mul). The anchor takes over
// the last fused node's result value (its name included); the fused nodes
// are removed. When R is computed after the anchor (Add(conv_a(x),
// conv_b(x)) fusing into conv_a), the anchor moves to the Add's place.
#pragma once

#include <functional>

#include "compiler/ir/graph.h"

namespace nanoc {

// Returns the number of nodes folded away. With `where`, only into anchors
// it accepts, from tail nodes it accepts too (the GPU's pass: GPU anchors,
// GPU tails; nanoc.ConvNHWC is an anchor there).
int fuseEpilogues(Graph& graph, const std::function<bool(const Node&)>& where = nullptr);

}  // namespace nanoc
