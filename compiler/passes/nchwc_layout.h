// The layout pass: a CNN runs in the channel-blocked layout (ops/nchwc.h)
// from its first convolution to its pooling, converting only where the
// graph leaves the layout:
//
//   Conv 1x1 (unit strides, no padding, one group)   -> ConvNCHWc "pointwise"
//   Conv with one group per channel (depthwise)      -> ConvNCHWc "depthwise"
//   Conv with one group and at most 4 input channels -> ConvNCHWc "direct"
//     (its input stays in the model's layout: no Pack of a 3-channel image)
//   3x3 stride-1 Convs that Winograd takes (conv_to_gemm's rule), with a
//     panel of output channels or more            -> nanoc.Winograd {block}
//     (ops/winograd.h: X, Y and the bias blocked, U in panels of output
//     channels, weights transformed here)
//   other Convs of one group                         -> ConvNCHWc "direct"
//     reading X blocked
//   GlobalAveragePool                                -> GlobalAveragePoolNCHWc
//   MaxPool (2-D)                                    -> MaxPoolNCHWc
//   Concat along the channels, every input but the last whole blocks: the
//     same Concat, along the blocks
//   Relu, Clip, Sigmoid, HardSigmoid, HardSwish, LeakyRelu, Tanh, and Add,
//   Sub, Mul of blocked operands of one shape, per-channel ones ([N, C, 1, 1],
//   a squeeze-and-excitation scale) or constants (per channel: repacked, 0 in
//   the padding lanes; scalars as they are) stay the ops they are, on the
//   blocked shapes: lane by lane, so what the padding lanes hold reaches no
//   result (ops/nchwc.h).
//
// Weights and biases are reordered (and zero-padded to whole blocks) at
// compile time. A nanoc.Pack precedes a blocked op whose input is not
// blocked, a nanoc.Unpack follows a blocked value that anything else reads
// (or that is a graph output), so the entry signature keeps the model's
// layouts. The pass applies to the whole graph or not at all: only where it
// converts at least four convolutions, at least two thirds of them, with at
// most two conversions of tensors larger than one pixel (shufflenet's
// channel shuffles and the UNet's ConvTranspose keep the model's layout
// everywhere). Blocked, resnet50 ran 0.93x and 0.88x the time of NCHW on
// one and two threads, squeezenet1_1 0.76x and 0.68x (an AVX-512 Xeon).
// Runs before conv_to_gemm and the fusion passes (fuse_epilogue folds
// activations and residuals into nanoc.ConvNCHWc).
#pragma once

#include <cstdint>

#include "compiler/ir/graph.h"

namespace nanoc {

struct NchwcOptions {
  // Convert every op that has a blocked form, whatever the rules above say
  // (nanoc --nchwc: for measuring a graph both ways).
  bool always = false;
  // Winograd is on (conv_to_gemm): its 3x3 Convs run blocked by Winograd,
  // else by the direct loop.
  bool winograd = true;
  // The targets run the blocks' multiply-adds at full rate (16 lanes, two
  // 512-bit multiply-adds a cycle: Intel's AVX-512 cores, Zen 5): a 3x3
  // Conv whose Winograd U would stream from memory on a few tiles runs the
  // direct loop instead (nchwc_layout.cc: winogradStreamBound).
  bool full_rate_fma = false;
};

// `block`: lanes per channel block (the targets' common vector width in
// floats; < 2: the pass does nothing); `panel`: the pointwise weights' panel
// width, a multiple of every target's register tile columns. Returns the
// number of convolutions converted (0 where the graph keeps its layout).
int convertToNchwc(Graph& graph, int64_t block, int64_t panel, const NchwcOptions& options = {});

}  // namespace nanoc
