// What the data-movement ops' shape rules and references share: reading an
// index operand of any integer dtype, the run-time index policy, and walking
// a tensor by multi-index. Their lowerings (compiler/codegen/cpu/index_loops.h)
// implement the same policy, so a folded node and a kernel agree.
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ops/float_elements.h"

namespace nanoc {

// Index operands (Gather, GatherElements, GatherND, ScatterND,
// ScatterElements) are i32 or i64; fails naming the operand otherwise.
void requireIndexDType(const Node& node, size_t index, const char* operand);

// Element `i` of an integer buffer of `dtype`, widened to int64.
int64_t readInt(DType dtype, const void* data, int64_t i);

// The run-time policy for an index read from a tensor into an axis of size
// `dim` >= 1: a negative index counts from the end once (ONNX's rule), and
// what is still out of [0, dim) is clamped to the nearest end, so a bad index
// reads or writes a valid element instead of stray memory. ONNX calls such
// input an error without defining a result; ONNX Runtime rejects it at run
// time.
inline int64_t clampIndex(int64_t index, int64_t dim) {
  if (index < 0) index += dim;
  return index < 0 ? 0 : (index >= dim ? dim - 1 : index);
}

// Row-major element strides of `dims`.
std::vector<int64_t> stridesOf(const std::vector<int64_t>& dims);

// Calls fn(index, linear) for every element of a tensor of `dims` in
// row-major order (`index` is the multi-index).
void forEachIndex(const std::vector<int64_t>& dims,
                  const std::function<void(const std::vector<int64_t>& index, int64_t linear)>& fn);

// dst[i] = src[base + sum_d index_d * strides[d]] for every element i of a
// tensor of `dims`; elements are `esize` bytes. Slice, Expand and Transpose
// are this copy with different strides (negative for a reversed slice, 0 for
// a broadcast dim).
void copyStrided(const void* src, void* dst, size_t esize, const std::vector<int64_t>& dims,
                 int64_t base, const std::vector<int64_t>& strides);

// The input strides (and base offset) Slice and Expand read their output
// with, for copyStrided and the lowerings' strided copy.
struct StridedView {
  int64_t base = 0;
  std::vector<int64_t> strides;  // one per output dim
};
// Slice: starts give the base, steps scale the strides.
StridedView sliceView(const Node& node);
// Expand: stride 0 along the dims X broadcasts.
StridedView expandView(const Node& node);

}  // namespace nanoc
