// GlobalMaxPool: [N, C, spatial...] -> [N, C, 1, ...], the maximum over all
// spatial positions of each channel.
#include <limits>

#include "compiler/ir/op_registry.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc {

OpSchema makeGlobalMaxPoolSchema() {
  OpSchema schema;
  schema.name = "GlobalMaxPool";
  schema.infer = [](const Node& node) {
    const TensorType& x = inputType(node, 0);
    requireF32(node);
    if (x.rank() < 3) failNode(node, "X must have rank >= 3 ([N, C, spatial...]), got " + x.str());
    TensorType y = x;
    for (size_t i = 2; i < y.rank(); ++i) y.dims[i] = 1;
    return std::vector<TensorType>{y};
  };
  schema.reference = [](const Node& node, const std::vector<const void*>& in,
                        const std::vector<void*>& out) {
    const std::vector<int64_t>& dims = node.inputs[0]->type.dims;
    int64_t planes = dims[0] * dims[1];
    int64_t spatial = product(dims, 2, dims.size());
    const float* x = static_cast<const float*>(in[0]);
    float* y = static_cast<float*>(out[0]);
    for (int64_t p = 0; p < planes; ++p) {
      // An empty plane gives lowest(), as a window with no taps does in MaxPool.
      float m = std::numeric_limits<float>::lowest();
      for (int64_t i = 0; i < spatial; ++i) m = x[p * spatial + i] > m ? x[p * spatial + i] : m;
      y[p] = m;
    }
  };
  return schema;
}

}  // namespace nanoc
