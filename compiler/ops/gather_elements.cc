// GatherElements: output has indices' shape; output[p] = data[p with its
// `axis` coordinate replaced by indices[p]]. indices (i32 or i64) has data's
// rank and no dim larger than data's outside `axis`; its values follow the
// run-time policy of data_movement.h. data any dtype.
#include <cstring>

#include "compiler/ir/op_registry.h"
#include "compiler/ops/data_movement.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc {

OpSchema makeGatherElementsSchema() {
  OpSchema schema;
  schema.name = "GatherElements";
  schema.min_inputs = schema.max_inputs = 2;
  schema.infer = [](const Node& node) {
    const TensorType& data = inputType(node, 0);
    const TensorType& indices = inputType(node, 1);
    requireIndexDType(node, 1, "indices");
    int64_t axis = node.i("axis");
    if (axis < 0 || axis >= static_cast<int64_t>(data.rank()))
      failNode(node, "attribute 'axis' is " + std::to_string(axis) + ", must be in [0, " +
                         std::to_string(data.rank()) + ") for " + data.str());
    bool ok = indices.rank() == data.rank();
    for (size_t d = 0; ok && d < data.rank(); ++d)
      ok = static_cast<int64_t>(d) == axis ? (data.dims[d] > 0 || indices.numel() == 0)
                                           : indices.dims[d] <= data.dims[d];
    if (!ok) failNode(node, "indices " + indices.str() + " do not fit data " + data.str());
    return std::vector<TensorType>{{data.dtype, indices.dims}};
  };
  schema.reference = [](const Node& node, const std::vector<const void*>& in,
                        const std::vector<void*>& out) {
    const TensorType& data = node.inputs[0]->type;
    const TensorType& indices = node.inputs[1]->type;
    size_t axis = static_cast<size_t>(node.i("axis"));
    size_t esize = dtypeSize(data.dtype);
    std::vector<int64_t> ds = stridesOf(data.dims);
    const auto* src = static_cast<const uint8_t*>(in[0]);
    auto* dst = static_cast<uint8_t*>(out[0]);
    forEachIndex(indices.dims, [&](const std::vector<int64_t>& index, int64_t i) {
      int64_t at = 0;
      for (size_t d = 0; d < index.size(); ++d)
        at += (d == axis ? clampIndex(readInt(indices.dtype, in[1], i), data.dims[d]) : index[d]) *
              ds[d];
      std::memcpy(dst + i * esize, src + at * esize, esize);
    });
  };
  return schema;
}

}  // namespace nanoc
