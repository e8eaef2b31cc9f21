// Rewrites a 2-D f32 Conv with constant weights and one group into the
// matrix product the GEMM micro-kernel runs (ops/conv_gemm.h):
//   Conv(X, W, B)  ->  nanoc.ConvGemm(X, W, B) {kernel_shape, pads, strides,
//                                               dilations, panel}
// whose kernel packs Im2Col panels a task at a time into per-worker scratch,
// or, for a 1x1 convolution with unit strides and no padding, which is
// already a product over X's channels, nanoc.ConvGemm(X, W, B) {panel = 0}.
// The Conv's output value (its name included), its fused_* attributes and
// its residual input carry over. Targets without vector units (Cortex-M,
// RV64GC) keep the direct Conv: the panels would cost RAM they lack.
#pragma once

#include <cstdint>

#include "compiler/ir/graph.h"

namespace nanoc {

// `panel` > 0: the unit of a task's columns, a multiple of every target's
// tile width. Returns the number of Convs rewritten.
int convToGemm(Graph& graph, int64_t panel);

}  // namespace nanoc
