// Operand views for the GPU's MatMuls (nanoc --target sm_XY, after the
// chains, before split-K): a GPU MatMul operand made by a chain of GPU
// data movement that only reorders or selects elements
//
//   T -> Slice (steps >= 1)? -> (Reshape | Transpose)* -> MatMul operand
//
// is read in place from T through a strided view (ops/operand_view.h)
// instead: the MatMul's input becomes T with the view's shape, strides and
// offset as attributes, and the chain's kernels go (dead-code elimination).
// Attention is the case: the heads of Q, K and V sliced out of one QKV
// projection, reshaped to [batch, tokens, heads, dim] and transposed per
// head were three Slice and three Transpose kernels a layer. Each value of
// the chain must have the one consumer, a Reshape must keep the view
// strided (PyTorch's no-copy rule: it splits or merges dims whose strides
// nest), and the chain must hold a kernel (a Slice or a Transpose). The
// values read are the same elements, so the product's results are bitwise
// those of the unfolded graph.
#pragma once

#include <cstddef>

#include "compiler/ir/graph.h"

namespace nanoc {

// Returns the number of operands folded.
size_t foldGpuOperandViews(Graph& graph);

// The strides of a view of `dims` / `strides` reshaped to `new_dims`
// without copying, if it exists (the same elements in the same row-major
// order); empty otherwise. Exposed for tests.
std::vector<int64_t> reshapedViewStrides(const std::vector<int64_t>& dims,
                                         const std::vector<int64_t>& strides,
                                         const std::vector<int64_t>& new_dims);

}  // namespace nanoc
