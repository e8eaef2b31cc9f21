// Softmax over the one axis `axis` (ONNX opset >= 13 semantics).
#include <algorithm>
#include <cmath>
#include <limits>

#include "compiler/ir/op_registry.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc {

OpSchema makeSoftmaxSchema() {
  OpSchema schema;
  schema.name = "Softmax";
  schema.infer = [](const Node& node) {
    const TensorType& x = inputType(node, 0);
    requireF32(node);
    int64_t axis = node.i("axis");
    if (axis < 0 || axis >= static_cast<int64_t>(x.rank()))
      failNode(node, "attribute 'axis' is " + std::to_string(axis) + ", must be in [0, " +
                         std::to_string(x.rank()) + ") for " + x.str());
    return std::vector<TensorType>{x};
  };
  schema.reference = [](const Node& node, const std::vector<const void*>& in,
                        const std::vector<void*>& out) {
    const std::vector<int64_t>& dims = node.inputs[0]->type.dims;
    size_t axis = static_cast<size_t>(node.i("axis"));
    int64_t outer = product(dims, 0, axis);
    int64_t len = dims[axis];
    int64_t inner = product(dims, axis + 1, dims.size());
    const float* x = static_cast<const float*>(in[0]);
    float* y = static_cast<float*>(out[0]);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        const float* xs = x + o * len * inner + i;
        float* ys = y + o * len * inner + i;
        // Subtracting the max keeps every exp in (0, 1]: no overflow.
        float max = -std::numeric_limits<float>::infinity();
        for (int64_t j = 0; j < len; ++j) max = std::max(max, xs[j * inner]);
        double sum = 0;
        for (int64_t j = 0; j < len; ++j) sum += std::exp(static_cast<double>(xs[j * inner]) - max);
        for (int64_t j = 0; j < len; ++j)
          ys[j * inner] =
              static_cast<float>(std::exp(static_cast<double>(xs[j * inner]) - max) / sum);
      }
  };
  return schema;
}

}  // namespace nanoc
