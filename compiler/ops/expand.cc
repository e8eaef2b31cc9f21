// Expand: broadcasts X to `shape`, which the frontend has resolved to the
// full output shape (ONNX's bidirectional rule applied): X's dims, aligned to
// the right, are each 1 or equal to the output's. Any dtype.
#include "compiler/ir/op_registry.h"
#include "compiler/ops/data_movement.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc {
OpSchema makeExpandSchema() {
  OpSchema schema;
  schema.name = "Expand";
  schema.infer = [](const Node& node) {
    const TensorType& x = inputType(node, 0);
    const std::vector<int64_t>& shape = node.ints("shape");
    bool ok = shape.size() >= x.rank();
    for (size_t d = 0; ok && d < x.rank(); ++d) {
      int64_t out = shape[shape.size() - x.rank() + d];
      ok = x.dims[d] == out || x.dims[d] == 1;
    }
    int64_t numel = 1;
    for (int64_t d : shape)
      if (d < 0 || __builtin_mul_overflow(numel, d, &numel)) ok = false;
    if (!ok) failNode(node, "cannot broadcast " + x.str() + " to " + dimsStr(shape));
    return std::vector<TensorType>{{x.dtype, shape}};
  };
  schema.reference = [](const Node& node, const std::vector<const void*>& in,
                        const std::vector<void*>& out) {
    const TensorType& x = node.inputs[0]->type;
    const TensorType& y = node.outputs[0]->type;
    if (y.numel() == 0) return;
    copyStrided(in[0], out[0], dtypeSize(x.dtype), y.dims, 0, expandView(node).strides);
  };
  return schema;
}

}  // namespace nanoc
