// Rewrites a 2-D f32 Conv with constant weights and one group into the
// matrix product the GEMM micro-kernel runs (ops/conv_gemm.h):
//   Conv(X, W, B)  ->  nanoc.ConvGemm(X, W, B) {kernel_shape, pads, strides,
//                                               dilations, panel}
// whose kernel packs Im2Col panels a task at a time into per-worker scratch,
// or, for a 1x1 convolution with unit strides and no padding, which is
// already a product over X's channels, nanoc.ConvGemm(X, W, B) {panel = 0}.
// The Conv's output value (its name included), its fused_* attributes and
// its residual input carry over; so do they into nanoc.Winograd. Targets
// without vector units (Cortex-M,
// RV64GC) keep the direct Conv: the panels would cost RAM they lack.
#pragma once

#include <cstdint>

#include "compiler/ir/graph.h"
#include "compiler/ops/weight_rows.h"

namespace nanoc {

// `panel` > 0: the unit of a task's columns, a multiple of every target's
// tile width. `row_group`: a divisor of kWeightRowGroup (ops/weight_rows.h)
// and a multiple of every target's tile rows, the row group of grouped W
// and the pixels of a transposed product's Im2Col panels. With `winograd`,
// a 3x3 stride-1 undilated Conv with enough channels and output tiles
// (winogradTile) becomes nanoc.Winograd(X, U, B) instead (ops/winograd.h),
// U its weights transformed here. Returns the number of Convs rewritten.
int convToGemm(Graph& graph, int64_t panel, bool winograd = false,
               int64_t row_group = kWeightRowGroup);

// The Winograd tile m for a Conv of C input and M output channels and an OH
// x OW output: 4 (F(4x4, 3x3)) where that gives 16 tiles or more with at
// least 3/4 of their outputs inside the map, else 2 where F(2x2, 3x3) gives
// 16 tiles (a 7 x 7 or 13 x 13 map; 2.25x fewer multiply-adds, weights 16/9
// their size), else 0 (the packed product), as for few channels (the
// transforms cost more than the products save).
int64_t winogradTile(int64_t C, int64_t M, int64_t OH, int64_t OW);

}  // namespace nanoc
