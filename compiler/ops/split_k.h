// nanoc.SplitKSum: the second half of a product split along K on the GPU
// (passes/gpu_split_k.h), after the partial ConvNHWC (ops/channels_last.h)
// that computes each slice of K into P:
//
//   nanoc.SplitKSum(P [S, d...], B [d_last]?, R [d...]?)
//       {fused_activation?, fused_alpha?, fused_beta?} -> Y [d...]
//     Y = act(P[0] + P[1] + ... + P[S - 1] + B + R)
//
// summed in f32 in that order (s = 0 first, then the bias broadcast along
// the last dim, then the residual), then the activation (ops/epilogue.h's
// attributes and formulas): the store of the product it replaces.
#pragma once

#include <cstddef>

namespace nanoc {

inline constexpr size_t kSplitKBiasInput = 1, kSplitKResidualInput = 2;

}  // namespace nanoc
