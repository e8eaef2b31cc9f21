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
    // Zero dims count as one in the overflow check, so a zero-element shape
    // cannot hide dims whose product overflows.
    int64_t numel = 1, span = 1;
    for (int64_t d : shape) {
      if (d < 0) failNode(node, "attribute 'shape' " + dimsStr(shape) + " has a negative dim");
      if (__builtin_mul_overflow(span, d == 0 ? 1 : d, &span))
        failNode(node, "attribute 'shape' " + dimsStr(shape) + " overflows");
      numel *= d;
    }
    if (numel != x.numel())
      failNode(node, "cannot reshape " + x.str() + " (" + std::to_string(x.numel()) +
                         " elements) to " + dimsStr(shape) + " (" + std::to_string(numel) +
                         " elements)");
    return std::vector<TensorType>{{x.dtype, shape}};
  };
  schema.reference = [](const Node& node, const std::vector<const void*>& in,
                        const std::vector<void*>& out) {
    // A zero-element constant may have no storage (in[0] NULL): memcpy's
    // pointers must be valid even for 0 bytes.
    if (const uint64_t bytes = node.outputs[0]->type.bytes()) std::memcpy(out[0], in[0], bytes);
  };
  return schema;
}

}  // namespace nanoc
