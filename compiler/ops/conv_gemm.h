// The internal ops of a 2-D Conv on the GEMM micro-kernel. conv_to_gemm.cc
// emits the last two forms of nanoc.ConvGemm below; nanoc.Im2Col and
// ConvGemm on its panels are the same patches through the arena (a whole
// patch matrix), kept as the tested reference of the packing code and for
// comparisons (their kernels share it):
//
//   nanoc.Im2Col(X [N, C, H, W]) {kernel_shape, pads, strides, dilations, panel}
//     -> COL [N, ceil(P / panel), C * kH * kW, panel]
//   COL[n, p / panel, k, p % panel] = X[n, c, oh * sh - ph + i * dh, ow * sw - pw + j * dw]
//   (0 in the padding), with P = OH * OW output pixels, p = oh * OW + ow and
//   k = (c * kH + i) * kW + j; the columns of the last panel past P are 0.
//   Each panel is a K x panel matrix: the packed B of the micro-kernel, built
//   at run time, one layout for every ISA variant of the program (`panel` is a
//   multiple of each variant's tile width).
//
//   nanoc.ConvGemm(B, W [M, C, kH, kW], bias [M]?) {panel, output_spatial = [OH, OW]}
//     -> Y [N, M, OH, OW],  Y[n, m, p] = bias[m] + sum_k W[m, k] * B(n, k, p)
//   where B is an Im2Col result (panel > 0) or, for a 1x1 convolution with
//   unit strides and no padding, X itself (panel = 0: B(n, k, p) = X[n, k, p]).
//
//   nanoc.ConvGemm(X [N, C, H, W], W, bias?) {kernel_shape, pads, strides,
//   dilations, panel, output_spatial}: the same product with B = Im2Col(X),
//   whose panels the kernel packs itself, a task's columns at a time, into
//   its worker's scratch (never a whole patch matrix in the arena). `panel`
//   is then the unit of a task's columns (a multiple of every variant's nr).
//   The fusion pass's attributes (fused_*) and residual input carry over from
//   the Conv.
//
// A pointwise ConvGemm (panel = 0, B is X in place) may take a per-channel
// scale of X as input kChannelScaleInput (4), S [N, K, 1, 1]: B(n, k, p) =
// X[n, k, p] * S[n, k], the Mul of a squeeze-and-excitation block folded in
// by passes/fuse_channel_scale.h. The kernel scales W's columns instead (a
// task's rows of W times S, rounded to f32, into its worker's scratch): a
// pass over M x K weights rather than over the K x P activations. The inputs
// before it are null where absent.
//
// Each form may instead take W packed in groups of 24 rows (weight_rows.h),
// with the attribute out_channels = M: W [ceil(M / 24), K, 24], as
// conv_to_gemm writes it for 1x1 Convs, whose few pixels per weight on 7 x 7
// and 14 x 14 maps stalled on memory reading mr rows K apart.
//
// Each form may take the attribute pixel_rows = S (with out_channels; not
// with a channel scale; with a window, only a 1x1 one without padding, whose
// pixels the kernel reads from X in place, `panel` unused): the same Y
// from the transposed product, Y^T = B^T W^T, whose rows are the pixels and
// whose columns are the output channels, and W in groups of S rows, [ceil(M
// / S), K, S], which are W^T's packed panels of S columns (S a multiple of
// every variant's nr). conv_to_gemm writes it for strided or larger windows
// on maps of fewer than 64 pixels that do not fill whole vectors (7 x 7: 49
// = 32 + 16 + 1 lanes), where the output channels fill every lane: a 1x1
// window read in place, others through an Im2Col whose panels hold 24
// pixels (a multiple of every variant's mr). Each register tile is
// transposed before its store.
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ops/weight_rows.h"

namespace nanoc {

constexpr size_t kChannelScaleInput = 4;

struct Im2ColShape {
  int64_t n = 0, c = 0, h = 0, w = 0;
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1;
  int64_t pad_h = 0, pad_w = 0;  // begins (the ends only bound OH, OW)
  int64_t oh = 0, ow = 0;
  int64_t panel = 1;
  int64_t pixels() const { return oh * ow; }
  int64_t k() const { return c * kh * kw; }
  int64_t panels() const { return (pixels() + panel - 1) / panel; }
  std::vector<int64_t> outputDims() const { return {n, panels(), k(), panel}; }
};
Im2ColShape im2colShape(const Node& node);

struct ConvGemmShape {
  int64_t n = 0, m = 0, k = 0, oh = 0, ow = 0;
  bool grouped_w = false;  // W [ceil(M / g), K, g], g = w_group
  // W's dims[2]: a divisor of kWeightRowGroup (convToGemm's row_group, the
  // program's tile rows), or pixel_rows.
  int64_t w_group = kWeightRowGroup;
  // > 0: the product's rows are the pixels (the pixel_rows form above), W's
  // groups of this many rows its packed B panels (w_group).
  int64_t pixel_rows = 0;
  int64_t wIndex(int64_t row, int64_t col) const {
    return grouped_w ? weightRowIndex(row, col, k, w_group) : row * k + col;
  }
  int64_t panel = 0;  // 0: B is X in place
  bool has_bias = false;
  bool has_scale = false;  // input kChannelScaleInput: S [N, K, 1, 1]
  // Input 0 is X and the kernel packs B from it (`window` describes how).
  bool packs = false;
  Im2ColShape window;
  int64_t pixels() const { return oh * ow; }
};
ConvGemmShape convGemmShape(const Node& node);

}  // namespace nanoc
