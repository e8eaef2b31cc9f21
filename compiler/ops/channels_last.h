// Channels-last (NHWC) forms of the NCHW ops that the GPU's layout pass
// (passes/gpu_nhwc_layout.h) writes: each is its base op on permuted
// operands, so the base op (its shape rule, its reference) stays the one
// place that knows the semantics.
//
//   nanoc.ConvNHWC(X [N, in..., C], W [kernel..., C / group, M], B [M]?)
//       {Conv's attributes} -> Y [N, out..., M]
//     W is Conv's [M, C / group, kernel...] reordered (at compile time) so
//     that, read as a row-major [K, M] matrix with K = taps * C / group, its
//     row (tap, ci) holds every output channel's weight for input channel ci
//     of the group at kernel tap `tap`: the B operand of an implicit GEMM
//     whose A gathers, along k, the contiguous channels of one input pixel.
//   nanoc.MaxPoolNHWC, nanoc.AveragePoolNHWC (X [N, in..., C])
//       {the pool's attributes} -> [N, out..., C]
//   nanoc.GlobalAveragePoolNHWC(X [N, in..., C]) -> [N, 1..., C]
//   nanoc.ConvTransposeNHWC(X [N, in..., C], W [C, M / group, kernel...],
//       B [M]?) {ConvTranspose's attributes} -> Y [N, out..., M]
//     W keeps ConvTranspose's layout.
//   nanoc.ResizeNHWC(X [N, in..., C]) {Resize's attributes, their per-axis
//       lists in the NCHW order of the base op} -> [N, out..., C]
//
// Each takes its base op's attributes unchanged (kernel_shape, pads,
// strides, dilations, group, ceil_mode, count_include_pad, Resize's sizes,
// scales and roi).
//
// A ConvNHWC split along K (ops/split_k.h) computes partial sums:
//   nanoc.ConvNHWC(X, W) {..., split_k_chunk = Kc} -> P [S, N, out..., M]
//     over K = taps * C / group (W's rows, in their kernel-major order).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ops/split_k.h"

namespace nanoc {

// The op a channels-last form stands for ("Conv" for "nanoc.ConvNHWC"); ""
// when `op` is no channels-last form.
std::string channelsFirstOp(const std::string& op);
// The channels-last form of a base op ("" when it has none).
std::string channelsLastOp(const std::string& op);

// Permutations of a tensor of rank r (r >= 2): out dim i = in dim perm[i].
std::vector<int64_t> toChannelsLast(size_t rank);   // [N, C, s...] -> [N, s..., C]
std::vector<int64_t> toChannelsFirst(size_t rank);  // [N, s..., C] -> [N, C, s...]
// Conv's weights: [M, C / group, kernel...] -> [kernel..., C / group, M].
std::vector<int64_t> toKernelMajor(size_t rank);
std::vector<int64_t> fromKernelMajor(size_t rank);
std::vector<int64_t> permuteDims(const std::vector<int64_t>& dims,
                                 const std::vector<int64_t>& perm);
// The bytes of a dense tensor of `type` permuted by `perm` (Transpose's
// result): how the pass reorders constants at compile time.
std::vector<uint8_t> permuteTensor(const TensorType& type, const void* data,
                                   const std::vector<int64_t>& perm);

// The base-op node that a channels-last node stands for: the same
// attributes, its operands permuted to the base op's layouts (values owned
// here, typed, without data). Its shape rule and decoders (convShape,
// poolShape) take it as they take the base op. A split ConvNHWC's view is
// the whole Conv: no split_k_chunk, its output without the leading S.
struct ChannelsFirstView {
  std::vector<std::unique_ptr<Value>> values;
  Node node;
};
std::unique_ptr<ChannelsFirstView> channelsFirstView(const Node& node);

// decode(the base-op node that `node` stands for): `node` itself, or a
// channels-last form's channelsFirstView; for the geometry decoders
// (poolShape, convTransposeShape, ...) that kernels of both forms share.
template <typename Decode>
auto decodeAsChannelsFirst(const Node& node, Decode&& decode) {
  if (channelsFirstOp(node.op).empty()) return decode(node);
  return decode(channelsFirstView(node)->node);
}

}  // namespace nanoc
