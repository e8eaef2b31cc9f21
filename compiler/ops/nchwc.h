// The channel-blocked layout (NCHWc): a [N, C, H, W] tensor held as
// [N, ceil(C / b), H, W, b], channel c of pixel (h, w) at block c / b, lane
// c % b, with b the target's vector width in floats (16 on AVX-512, 8 on AVX2,
// 4 on NEON and RVV at VLEN 128). A pixel's b channels are one vector, so a
// convolution's register tile holds whole pixels and a depthwise kernel
// vectorizes over channels. passes/nchwc_layout.h writes these ops. The
// lanes past C (the last block's padding) reach no result: every op but the
// pointwise and the blocked direct ConvNCHWc and Unpack is lane by lane, and
// those read only lanes below C (Pack writes 0 there, the other
// convolutions' weights and bias are 0 there).
//
//   nanoc.Pack(X [N, C, H, W]) {block = b} -> [N, ceil(C / b), H, W, b]
//   nanoc.Unpack(X [N, Cb, H, W, b]) {channels = C} -> [N, C, H, W]
//     (C in ((Cb - 1) * b, Cb * b])
//   nanoc.GlobalAveragePoolNCHWc(X [N, Cb, H, W, b]) -> [N, Cb, 1, 1, b]
//   nanoc.MaxPoolNCHWc(X [N, Cb, H, W, b]) {kernel_shape, strides, pads,
//       dilations, output_spatial = [OH, OW]} -> [N, Cb, OH, OW, b]: f32
//       MaxPool's result lane by lane (the max of the taps inside X, a NaN
//       never taken, the lowest float where none is), its output extents
//       given (the pass copies them from the MaxPool, ceil_mode included).
//   nanoc.Winograd with `block` = b (ops/winograd.h): a 3x3 stride-1 Conv by
//       Winograd on X [N, ICb, H, W, b], Y [N, OCb, OH, OW, b].
//
//   nanoc.ConvNCHWc(X, W, bias?, residual?) {form, block, out_channels,
//       kernel_shape, strides, pads, panel?} -> Y [N, OCb, OH, OW, b]
//   with OCb = ceil(out_channels / b), bias [OCb * b] (0 past out_channels),
//   the residual input kResidualInput (3) of Y's type and the fused_*
//   epilogue (ops/epilogue.h), and by `form`:
//     "pointwise": a 1x1 unit-stride unpadded Conv, X [N, ICb, H, W, b],
//       W [ceil(OCb * b / panel), K, panel] with K the input channels
//       (ceil(K / b) = ICb): column panels of W^T (W^T(k, m) at
//       [m / panel, k, m % panel], 0 past out_channels), as the packed
//       product reads them (gemm_microkernel.h's b_panel_stride); `panel` is
//       a multiple of every variant's tile columns. It reads no lane of X
//       past K and writes 0 to Y's lanes past out_channels, so the padding
//       lanes of its input never reach a result whatever they hold.
//     "depthwise": one group per channel (out_channels = C),
//       X [N, Cb, H, W, b], W [Cb, kH, kW, b].
//     "direct": a dense convolution (one group), W [OCb, C, kH, kW, b],
//       X either in the model's own layout [N, C, H, W] (a stem with few
//       channels: no Pack of a 3-channel image into 16 lanes) or
//       channel-blocked [N, ICb, H, W, b] with ceil(C / b) = ICb (C, the
//       input channels, W's): acc(pixel) += W[ocb, c, kh, kw, :] * X's
//       channel c at (ih, iw), broadcast. It reads no lane of a blocked X
//       past C.
//   kernel_shape, strides: 2 entries each; pads: 4 (top, left, bottom, right).
//   The pointwise form may take a per-channel scale of X as input
//   kChannelScaleInput (4, ops/conv_gemm.h), S [N, ICb, 1, 1, b] (a
//   squeeze-and-excitation's Mul, folded in by passes/fuse_channel_scale.h):
//   the kernel multiplies W^T's row k by S[n, k], rounded to f32, into its
//   worker's scratch, not X.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"

namespace nanoc {

enum class NchwcForm { Pointwise, Depthwise, Direct };

struct ConvNchwcShape {
  NchwcForm form = NchwcForm::Pointwise;
  int64_t block = 1;
  int64_t n = 0, c = 0, h = 0, w = 0;  // c: X's channels (blocked: Cb * b; direct: W's C)
  int64_t k = 0;                       // pointwise: the input channels W holds
  int64_t oc = 0, ocb = 0;             // out_channels and its blocks
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, pad_h = 0, pad_w = 0;
  int64_t oh = 0, ow = 0;
  int64_t panel = 0;  // pointwise W's panel width
  bool has_bias = false;
  bool has_scale = false;      // pointwise: input kChannelScaleInput (4)
  bool blocked_input = false;  // direct: X is [N, ceil(C / b), H, W, b]
  int64_t outPadded() const { return ocb * block; }
  std::vector<int64_t> outputDims() const { return {n, ocb, oh, ow, block}; }
};
ConvNchwcShape convNchwcShape(const Node& node);

// Blocks of `channels` channels at block width `block`.
inline int64_t channelBlocks(int64_t channels, int64_t block) {
  return (channels + block - 1) / block;
}

}  // namespace nanoc
