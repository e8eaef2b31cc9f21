// Split-K for the GPU's products (nanoc --target sm_XY, after the layout and
// the epilogues): a product whose tiles are too few to fill the GPU runs as
// S products over slices of K, one block per tile and slice, and a sum:
//
//   nanoc.ConvNHWC(X, W, B?, R?) {act?}             -> Y
// becomes
//   nanoc.ConvNHWC(X, W) {split_k_chunk = Kc}       -> P [S, Y's dims...]
//   nanoc.SplitKSum(P, B?, R?) {act?}                -> Y
//
// and the same for MatMul (B its fused bias) and Gemm (alpha 1; B its C, a
// row [N] with beta 1) (ops/split_k.h). A batch-1 CNN's deep layers are
// the case: resnet18's 7 x 7 x 512 layers are 8 blocks of 64 x 64 on a GPU
// of 132 SMs, each a K loop of 4,608; split in 32 slices of 144 they are
// 256 blocks; a GPT-2 block's 128 x 768 x 3072 MatMul is 6 tiles of
// 128 x 128. The sum adds the slices in a fixed order: the result does not
// depend on the order the blocks ran in.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "compiler/ir/graph.h"

namespace nanoc {

// `chunk_of(node)` is the K chunk for a GPU node (codegen/gpu's
// chooseSplitK), 0 to leave it whole. Returns the number of products split.
size_t splitGpuProductsAlongK(Graph& graph, const std::function<int64_t(const Node&)>& chunk_of);

}  // namespace nanoc
