// Gather: output = data[:axis] dims + indices dims + data[axis+1:] dims;
// output[o, j, i] = data[o, indices[j], i]. indices are i32 or i64, read with
// the run-time policy of data_movement.h (negative from the end, then
// clamped). data any dtype.
#include <cstring>

#include "compiler/ir/op_registry.h"
#include "compiler/ops/data_movement.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc {

OpSchema makeGatherSchema() {
  OpSchema schema;
  schema.name = "Gather";
  schema.min_inputs = schema.max_inputs = 2;
  schema.infer = [](const Node& node) {
    const TensorType& data = inputType(node, 0);
    const TensorType& indices = inputType(node, 1);
    requireIndexDType(node, 1, "indices");
    int64_t axis = node.i("axis");
    if (axis < 0 || axis >= static_cast<int64_t>(data.rank()))
      failNode(node, "attribute 'axis' is " + std::to_string(axis) + ", must be in [0, " +
                         std::to_string(data.rank()) + ") for " + data.str());
    if (data.dims[axis] == 0 && indices.numel() > 0)
      failNode(node, "gathers from the empty axis " + std::to_string(axis) + " of " + data.str());
    TensorType y{data.dtype, {}};
    y.dims.insert(y.dims.end(), data.dims.begin(), data.dims.begin() + axis);
    y.dims.insert(y.dims.end(), indices.dims.begin(), indices.dims.end());
    y.dims.insert(y.dims.end(), data.dims.begin() + axis + 1, data.dims.end());
    return std::vector<TensorType>{y};
  };
  schema.reference = [](const Node& node, const std::vector<const void*>& in,
                        const std::vector<void*>& out) {
    const TensorType& data = node.inputs[0]->type;
    const TensorType& indices = node.inputs[1]->type;
    size_t axis = static_cast<size_t>(node.i("axis"));
    int64_t outer = product(data.dims, 0, axis);
    int64_t dim = data.dims[axis];
    int64_t block = product(data.dims, axis + 1, data.rank()) * dtypeSize(data.dtype);
    int64_t count = indices.numel();
    const auto* src = static_cast<const uint8_t*>(in[0]);
    auto* dst = static_cast<uint8_t*>(out[0]);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < count; ++j) {
        int64_t k = clampIndex(readInt(indices.dtype, in[1], j), dim);
        std::memcpy(dst + (o * count + j) * block, src + (o * dim + k) * block, block);
      }
  };
  return schema;
}

}  // namespace nanoc
