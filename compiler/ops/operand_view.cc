#include "compiler/ops/operand_view.h"

#include <string>

#include "compiler/ir/error.h"
#include "compiler/ops/data_movement.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc {

const char* operandViewShapeAttr(int input) { return input == 0 ? "a_view_shape" : "b_view_shape"; }
const char* operandViewStridesAttr(int input) {
  return input == 0 ? "a_view_strides" : "b_view_strides";
}
const char* operandViewOffsetAttr(int input) {
  return input == 0 ? "a_view_offset" : "b_view_offset";
}

std::optional<OperandView> operandView(const Node& node, int input) {
  const bool shape = node.has(operandViewShapeAttr(input));
  const bool strides = node.has(operandViewStridesAttr(input));
  const bool offset = node.has(operandViewOffsetAttr(input));
  if (!shape && !strides && !offset) return std::nullopt;
  const std::string what = std::string(input == 0 ? "A" : "B") + "'s view";
  if (!shape || !strides || !offset)
    failNode(node, what + " needs " + operandViewShapeAttr(input) + ", " +
                       operandViewStridesAttr(input) + " and " + operandViewOffsetAttr(input));
  OperandView v;
  v.shape = node.ints(operandViewShapeAttr(input));
  v.strides = node.ints(operandViewStridesAttr(input));
  v.offset = node.i(operandViewOffsetAttr(input), 0);
  if (v.shape.empty() || v.shape.size() != v.strides.size())
    failNode(node, what + ": shape and strides must have one entry per dim (rank >= 1)");
  if (static_cast<size_t>(input) >= node.inputs.size() || !node.inputs[static_cast<size_t>(input)])
    failNode(node, what + " has no input");
  const int64_t size = node.inputs[static_cast<size_t>(input)]->type.numel();
  if (v.offset < 0) failNode(node, what + ": negative offset");
  bool empty = false;
  for (size_t d = 0; d < v.shape.size(); ++d) {
    if (v.shape[d] < 0 || v.strides[d] < 0) failNode(node, what + ": negative dim or stride");
    empty = empty || v.shape[d] == 0;
  }
  if (empty) return v;  // reads nothing
  // The last element read, o + sum (d_i - 1) * s_i, below the input's size;
  // each step checked before it is added (no overflow).
  const std::string past =
      what + " reaches past its input of " + std::to_string(size) + " elements";
  if (v.offset >= size) failNode(node, past);
  int64_t last = v.offset;
  for (size_t d = 0; d < v.shape.size(); ++d) {
    if (v.shape[d] <= 1 || v.strides[d] == 0) continue;
    if (v.strides[d] > (size - 1 - last) / (v.shape[d] - 1)) failNode(node, past);
    last += (v.shape[d] - 1) * v.strides[d];
  }
  return v;
}

bool hasOperandView(const Node& node) {
  return operandView(node, 0).has_value() || operandView(node, 1).has_value();
}

TensorType operandType(const Node& node, int input) {
  std::optional<OperandView> v = operandView(node, input);
  if (!v) return inputType(node, static_cast<size_t>(input));
  const TensorType& in = inputType(node, static_cast<size_t>(input));
  if (in.dtype != DType::F32) failNode(node, "a view reads f32 only, got " + in.str());
  return TensorType{DType::F32, v->shape};
}

void gatherOperandView(const OperandView& view, const float* src, float* dst) {
  copyStrided(src, dst, sizeof(float), view.shape, view.offset, view.strides);
}

void setOperandView(Node& node, int input, const OperandView& view) {
  node.attrs[operandViewShapeAttr(input)] = view.shape;
  node.attrs[operandViewStridesAttr(input)] = view.strides;
  node.attrs[operandViewOffsetAttr(input)] = view.offset;
}

}  // namespace nanoc
