// ReverseSequence: for each batch entry b (along batch_axis), the first
// sequence_lens[b] elements along time_axis are reversed and the rest kept.
// batch_axis and time_axis are 0 and 1 in either order; sequence_lens is i64
// [batch]; a length outside [0, time] is clamped into it at run time. X any
// dtype.
#include <cstring>

#include "compiler/ir/op_registry.h"
#include "compiler/ops/data_movement.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc {

OpSchema makeReverseSequenceSchema() {
  OpSchema schema;
  schema.name = "ReverseSequence";
  schema.min_inputs = schema.max_inputs = 2;
  schema.infer = [](const Node& node) {
    const TensorType& x = inputType(node, 0);
    const TensorType& lens = inputType(node, 1);
    int64_t batch_axis = node.i("batch_axis"), time_axis = node.i("time_axis");
    if (x.rank() < 2) failNode(node, "input " + x.str() + " must have rank >= 2");
    if (!((batch_axis == 0 && time_axis == 1) || (batch_axis == 1 && time_axis == 0)))
      failNode(node, "batch_axis and time_axis must be 0 and 1 in some order");
    if (lens.dtype != DType::I64 || lens.rank() != 1 || lens.dims[0] != x.dims[batch_axis])
      failNode(node, "sequence_lens " + lens.str() + " must be i64[" +
                         std::to_string(x.dims[batch_axis]) + "]");
    return std::vector<TensorType>{x};
  };
  schema.reference = [](const Node& node, const std::vector<const void*>& in,
                        const std::vector<void*>& out) {
    const TensorType& x = node.inputs[0]->type;
    size_t batch_axis = static_cast<size_t>(node.i("batch_axis"));
    size_t time_axis = static_cast<size_t>(node.i("time_axis"));
    int64_t time = x.dims[time_axis];
    size_t esize = dtypeSize(x.dtype);
    std::vector<int64_t> xs = stridesOf(x.dims);
    const auto* lens = static_cast<const int64_t*>(in[1]);
    const auto* src = static_cast<const uint8_t*>(in[0]);
    auto* dst = static_cast<uint8_t*>(out[0]);
    forEachIndex(x.dims, [&](const std::vector<int64_t>& index, int64_t i) {
      int64_t len = lens[index[batch_axis]];
      len = len < 0 ? 0 : (len > time ? time : len);
      int64_t t = index[time_axis];
      int64_t from = t < len ? len - 1 - t : t;
      std::memcpy(dst + i * esize, src + (i + (from - t) * xs[time_axis]) * esize, esize);
    });
  };
  return schema;
}

}  // namespace nanoc
