// Folds the per-channel scale of a pointwise convolution's input into the
// convolution (the Mul that ends a squeeze-and-excitation block):
//
//   Y = nanoc.ConvGemm(Mul(X, S), W, ...)   X [N, C, H, W], S [N, C, 1, 1]
//   ->  Y = nanoc.ConvGemm(X, W, ..., S)    (S as input kChannelScaleInput)
//
// for a ConvGemm that reads B in place (panel 0, W in row groups of 24, not
// the transposed product of pixel_rows), with the
// Mul's operands in either order, S f32 of exactly that shape (no other
// broadcast), and the Mul's result read by that ConvGemm alone and not a
// graph output, and only where the map has at least twice as many pixels as
// the ConvGemm has output channels: the kernel then scales a task's rows of W
// (M x K per image, read, written and read back) instead of a pass over X
// (K x H x W) through memory. The same for a pointwise nanoc.ConvNCHWc
// (ops/nchwc.h), X and S channel-blocked ([N, Cb, H, W, b] and
// [N, Cb, 1, 1, b]). Runs after conv_to_gemm.
#pragma once

#include "compiler/ir/graph.h"

namespace nanoc {

// Returns the number of Muls folded away.
int fuseChannelScales(Graph& graph);

}  // namespace nanoc
