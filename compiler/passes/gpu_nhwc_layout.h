// The GPU's layout pass (nanoc --target sm_XY, after placeOnGpu): the
// GPU's 2-D convolutions run channels-last (NHWC, ops/channels_last.h), and
// so does what follows them on the GPU, converting only where the graph
// leaves the layout:
//
//   Conv (2-D, f32, constant W and B)      -> nanoc.ConvNHWC, W reordered at
//     compile time to [kH, kW, C / group, M] (a [K, M] GEMM operand)
//   MaxPool, AveragePool, GlobalAveragePool, Resize of a channels-last X
//                                          -> nanoc.MaxPoolNHWC, ...
//   ConvTranspose of a channels-last X (constant W and B)
//                                          -> nanoc.ConvTransposeNHWC, W
//     and B as they are
//   Concat along the channels (axis 1) of channels-last inputs
//                                          -> the same Concat along axis 3
//   an elementwise op (a row of ops/elementwise_table.h, nanoc.Elementwise)
//     of rank 4 whose every operand is channels-last or a constant
//                                          -> the same op; constants
//     permuted at compile time, leading 1s dropped ([C, 1, 1] -> [C]);
//     one-element constants as they are
//
// Only nodes placed on the GPU change. A Transpose (on the GPU) makes a
// Conv's NCHW input channels-last (once per value), and another brings a
// channels-last value back for every other reader and for the graph's
// outputs (right after its producer), so the entry signature keeps the
// model's layouts. A conversion that moves only dims of size 1 (after a
// GlobalAveragePool: [N, 1, 1, C]) is a Reshape, which costs nothing. The
// pass applies to the whole graph or not at all: only where it has no more
// conversions that move data than convolutions it converts (a lone Conv
// between two Transposes stays NCHW).
#pragma once

#include "compiler/ir/graph.h"

namespace nanoc {

// Returns the number of convolutions converted (0 where the graph keeps
// its layout).
int convertGpuToNhwc(Graph& graph);

}  // namespace nanoc
