// MatMul operands read in place through a strided view of their input
// (passes/gpu_operand_views.h folds a Slice, Reshape and Transpose chain
// into the product this way, so attention reads its heads out of the QKV
// projection without copies). Input i (0: A, 1: B) with the attributes
//
//   a_view_shape   [d0, ..., dr-1]   the operand's dims (rank >= 1)
//   a_view_strides [s0, ..., sr-1]   in elements, each >= 0
//   a_view_offset  o                 in elements, >= 0
//
// (b_view_* for B) is the tensor whose element (i0, ..., ir-1) is the
// input's element number o + i0 * s0 + ... + ir-1 * sr-1 (the input read as
// a flat array, whatever its dims). The shape rule checks that every such
// element is inside the input, so a view never reads past its buffer. Only
// the GPU's MatMul reads views; the CPU lowering refuses them.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "compiler/ir/graph.h"

namespace nanoc {

struct OperandView {
  std::vector<int64_t> shape, strides;
  int64_t offset = 0;
};

// The attribute names of input i's view (0: "a_view_...", 1: "b_view_...").
const char* operandViewShapeAttr(int input);
const char* operandViewStridesAttr(int input);
const char* operandViewOffsetAttr(int input);

// Input i's view, if the node has one; fails naming the node when the
// attributes are incomplete, inconsistent or reach outside the input.
std::optional<OperandView> operandView(const Node& node, int input);
// Whether the node reads either operand through a view.
bool hasOperandView(const Node& node);
// Input i's type as the product sees it: the view's dims (f32), or the
// input's own type.
TensorType operandType(const Node& node, int input);
// The view's elements, dense row-major: dst[i] = src[offset + i . strides].
void gatherOperandView(const OperandView& view, const float* src, float* dst);
// Sets input i's view attributes.
void setOperandView(Node& node, int input, const OperandView& view);

}  // namespace nanoc
