// Products split along K on the GPU (passes/gpu_split_k.h). A ConvNHWC
// (ops/channels_last.h), MatMul or Gemm with the attribute split_k_chunk = Kc
// (> 0) computes partial sums instead of its result:
//
//   P [S, Y's dims...], P[s] = the product over k in [s * Kc, min(K, (s +
//   1) * Kc)) only, S = ceil(K / Kc)
//
// with no bias (MatMul's input 2), C (Gemm: and alpha 1), residual or
// activation. nanoc.SplitKSum then adds the slices:
//
//   nanoc.SplitKSum(P [S, d...], B [d_last] or [1, ..., 1, d_last]?, R [d...]?)
//       {fused_activation?, fused_alpha?, fused_beta?} -> Y [d...]
//     Y = act(P[0] + P[1] + ... + P[S - 1] + B + R)
//
// summed in f32 in that order (s = 0 first, then the bias broadcast along
// the last dim, then the residual), then the activation (ops/epilogue.h's
// attributes and formulas): the store of the product it replaces.
#pragma once

#include <cstddef>
#include <cstdint>

#include "compiler/ir/graph.h"

namespace nanoc {

inline constexpr size_t kSplitKBiasInput = 1, kSplitKResidualInput = 2;

inline constexpr const char* kSplitKChunkAttribute = "split_k_chunk";
// The node's split_k_chunk, 0 when it has none.
int64_t splitKChunk(const Node& node);
// ceil(k / chunk).
inline int64_t splitKSlices(int64_t k, int64_t chunk) { return (k + chunk - 1) / chunk; }
// The slices of K (of size k) a product sums, slice s over [s * chunk,
// min(k, (s + 1) * chunk)): its split_k_chunk's, or one slice of all of K
// when it has none.
struct KSlices {
  int64_t chunk = 1, count = 1;
};
KSlices kSlicesOf(const Node& node, int64_t k);
// A product's shape rule, after its own: with split_k_chunk, checks the
// split (chunk > 0, only A and B (X and W) as inputs, no activation, Gemm's
// alpha 1; fails naming the node) and puts S = ceil(k / chunk) ahead of y's
// dims. Without, y stays as it is.
void addSplitKSlices(const Node& node, int64_t k, TensorType& y);

}  // namespace nanoc
