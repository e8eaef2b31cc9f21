// Rewrites LayerNorm as exporters decompose it (torch below opset 17) into
// one LayerNormalization node, which runs in one pass over each row:
//
//   mean = ReduceMean(x) {axes = [last], keepdims = 1}
//   d = Sub(x, mean)
//   var = ReduceMean(Pow(d, 2)) {axes = [last], keepdims = 1}
//   y = Div(d, Sqrt(Add(var, eps)))            (Add's operands in either order)
//   [y = Mul(y, gamma)]  [y = Add(y, beta)]   (either order; gamma, beta [D])
//   -> LayerNormalization(x, gamma, beta) {axis = last, epsilon = eps}
//
// eps and the exponent 2 must be scalar constants; every intermediate must
// be f32, read by the pattern alone (d by the Pow and the Div) and not a
// graph output. Without the Mul the scale is a constant of ones. The new
// node takes the last matched node's place, name and result; the others go
// away. Its mean and inverse standard deviation results are unused.
#pragma once

#include "compiler/ir/graph.h"

namespace nanoc {

// Returns the number of LayerNorms rewritten.
int fuseLayerNorms(Graph& graph);

}  // namespace nanoc
