// Reshape: the same bytes under a new shape. The frontend resolves ONNX's -1
// and 0 entries, so `shape` holds every dim explicitly. Any dtype.
#include <cstring>

#include "compiler/ir/op_registry.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc {

OpSchema makeReshapeSchema() {
  OpSchema schema;
  schema.name = "Reshape";
  schema.infer = [](const Node& node) {
    const TensorType& x = inputType(node, 0);
    const std::vector<int64_t>& shape = node.ints("shape");
    int64_t numel = 1;
    for (int64_t d : shape) {
      if (d < 0) failNode(node, "attribute 'shape' " + dimsStr(shape) + " has a negative dim");
      if (__builtin_mul_overflow(numel, d, &numel))
        failNode(node, "attribute 'shape' " + dimsStr(shape) + " overflows");
    }
    if (numel != x.numel())
      failNode(node, "cannot reshape " + x.str() + " (" + std::to_string(x.numel()) +
                         " elements) to " + dimsStr(shape) + " (" + std::to_string(numel) +
                         " elements)");
    return std::vector<TensorType>{{x.dtype, shape}};
  };
  schema.reference = [](const Node& node, const std::vector<const void*>& in,
                        const std::vector<void*>& out) {
    std::memcpy(out[0], in[0], node.outputs[0]->type.bytes());
  };
  return schema;
}

}  // namespace nanoc
