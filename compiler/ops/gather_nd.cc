// GatherND with batch_dims b: data [B..., D...] (rank r), indices
// [B..., I..., m] (rank q, 1 <= m <= r - b), output [B..., I..., D[b+m:]...].
// Each index tuple picks the block data[batch, i_0, ..., i_{m-1}, ...]; the
// tuple's values follow the run-time policy of data_movement.h. indices are
// i32 or i64; data any dtype.
#include <algorithm>
#include <cstring>

#include "compiler/ir/op_registry.h"
#include "compiler/ops/data_movement.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc {

OpSchema makeGatherNDSchema() {
  OpSchema schema;
  schema.name = "GatherND";
  schema.min_inputs = schema.max_inputs = 2;
  schema.infer = [](const Node& node) {
    const TensorType& data = inputType(node, 0);
    const TensorType& indices = inputType(node, 1);
    requireIndexDType(node, 1, "indices");
    int64_t b = node.i("batch_dims");
    int64_t r = static_cast<int64_t>(data.rank()), q = static_cast<int64_t>(indices.rank());
    if (b < 0 || b >= std::min(r, q))
      failNode(node, "attribute 'batch_dims' " + std::to_string(b) + " must be in [0, " +
                         std::to_string(std::min(r, q)) + ") for data " + data.str() +
                         " and indices " + indices.str());
    int64_t m = indices.dims.back();
    if (m < 1 || m > r - b)
      failNode(node, "the last dim of indices " + indices.str() + " must be in [1, " +
                         std::to_string(r - b) + "] for data " + data.str());
    for (int64_t d = 0; d < b; ++d)
      if (indices.dims[d] != data.dims[d])
        failNode(node, "batch dim " + std::to_string(d) + " of indices " + indices.str() +
                           " differs from data " + data.str());
    int64_t tuples = product(indices.dims, b, q - 1);
    for (int64_t d = b; d < b + m; ++d)
      if (data.dims[d] == 0 && tuples > 0)
        failNode(node, "gathers from the empty axis " + std::to_string(d) + " of " + data.str());
    TensorType y{data.dtype, {indices.dims.begin(), indices.dims.end() - 1}};
    y.dims.insert(y.dims.end(), data.dims.begin() + b + m, data.dims.end());
    return std::vector<TensorType>{y};
  };
  schema.reference = [](const Node& node, const std::vector<const void*>& in,
                        const std::vector<void*>& out) {
    const TensorType& data = node.inputs[0]->type;
    const TensorType& indices = node.inputs[1]->type;
    size_t b = static_cast<size_t>(node.i("batch_dims"));
    size_t m = static_cast<size_t>(indices.dims.back());
    int64_t batches = product(data.dims, 0, b);
    int64_t tuples = product(indices.dims, b, indices.rank() - 1);
    int64_t batch_elems = product(data.dims, b, data.rank());
    int64_t block = product(data.dims, b + m, data.rank());
    size_t esize = dtypeSize(data.dtype);
    std::vector<int64_t> ds = stridesOf(data.dims);
    const auto* src = static_cast<const uint8_t*>(in[0]);
    auto* dst = static_cast<uint8_t*>(out[0]);
    for (int64_t n = 0; n < batches; ++n)
      for (int64_t t = 0; t < tuples; ++t) {
        int64_t tuple = (n * tuples + t) * static_cast<int64_t>(m);
        int64_t at = n * batch_elems;
        for (size_t k = 0; k < m; ++k)
          at += clampIndex(readInt(indices.dtype, in[1], tuple + k), data.dims[b + k]) * ds[b + k];
        std::memcpy(dst + (n * tuples + t) * block * esize, src + at * esize, block * esize);
      }
  };
  return schema;
}

}  // namespace nanoc
