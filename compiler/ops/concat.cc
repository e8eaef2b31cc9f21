// Concat: joins X0, X1, ... along `axis`; every other dim and the dtype must
// agree. Any dtype.
#include <cstring>
#include <limits>

#include "compiler/ir/op_registry.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc {

OpSchema makeConcatSchema() {
  OpSchema schema;
  schema.name = "Concat";
  schema.min_inputs = 1;
  schema.max_inputs = std::numeric_limits<int>::max();
  schema.infer = [](const Node& node) {
    const TensorType& first = inputType(node, 0);
    int64_t axis = node.i("axis");
    if (axis < 0 || axis >= static_cast<int64_t>(first.rank()))
      failNode(node, "attribute 'axis' is " + std::to_string(axis) + ", must be in [0, " +
                         std::to_string(first.rank()) + ") for " + first.str());
    TensorType y = first;
    y.dims[axis] = 0;
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const TensorType& t = inputType(node, i);
      bool same = t.dtype == first.dtype && t.rank() == first.rank();
      for (size_t d = 0; same && d < t.rank(); ++d)
        same = d == static_cast<size_t>(axis) || t.dims[d] == first.dims[d];
      if (!same)
        failNode(node, "operand " + std::to_string(i) + " " + t.str() + " does not match " +
                           first.str() + " outside axis " + std::to_string(axis));
      y.dims[axis] += t.dims[axis];
    }
    return std::vector<TensorType>{y};
  };
  schema.reference = [](const Node& node, const std::vector<const void*>& in,
                        const std::vector<void*>& out) {
    const TensorType& y = node.outputs[0]->type;
    size_t axis = static_cast<size_t>(node.i("axis"));
    int64_t outer = product(y.dims, 0, axis);
    // Bytes per outer index: each operand contributes one contiguous chunk.
    int64_t row = product(y.dims, axis, y.rank()) * dtypeSize(y.dtype);
    uint8_t* dst = static_cast<uint8_t*>(out[0]);
    int64_t at = 0;
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const TensorType& t = node.inputs[i]->type;
      int64_t chunk = product(t.dims, axis, t.rank()) * dtypeSize(t.dtype);
      const uint8_t* src = static_cast<const uint8_t*>(in[i]);
      for (int64_t o = 0; o < outer; ++o) std::memcpy(dst + o * row + at, src + o * chunk, chunk);
      at += chunk;
    }
  };
  return schema;
}

}  // namespace nanoc
