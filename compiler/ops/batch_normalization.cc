// BatchNormalization, inference form over axis 1:
// y = (x - mean) / sqrt(var + epsilon) * scale + B, with X [N, C, ...] and
// scale, B, mean, var all [C].
#include <cmath>

#include "compiler/ir/op_registry.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc {

OpSchema makeBatchNormalizationSchema() {
  OpSchema schema;
  schema.name = "BatchNormalization";
  schema.min_inputs = schema.max_inputs = 5;
  schema.infer = [](const Node& node) {
    const TensorType& x = inputType(node, 0);
    requireF32(node);
    if (x.rank() < 2) failNode(node, "X must have rank >= 2 ([N, C, ...]), got " + x.str());
    const char* names[] = {"X", "scale", "B", "mean", "var"};
    for (size_t i = 1; i < 5; ++i) {
      const TensorType& t = inputType(node, i);
      if (t.dims != std::vector<int64_t>{x.dims[1]})
        failNode(node, std::string(names[i]) + " must be [" + std::to_string(x.dims[1]) +
                           "] for X " + x.str() + ", got " + t.str());
    }
    double eps = node.f("epsilon");
    if (!(eps >= 0) || !std::isfinite(eps))
      failNode(node, "attribute 'epsilon' must be finite and >= 0, got " + std::to_string(eps));
    return std::vector<TensorType>{x};
  };
  schema.reference = [](const Node& node, const std::vector<const void*>& in,
                        const std::vector<void*>& out) {
    const std::vector<int64_t>& dims = node.inputs[0]->type.dims;
    int64_t channels = dims[1];
    int64_t inner = product(dims, 2, dims.size());
    double eps = node.f("epsilon");
    const float* x = static_cast<const float*>(in[0]);
    const float* scale = static_cast<const float*>(in[1]);
    const float* bias = static_cast<const float*>(in[2]);
    const float* mean = static_cast<const float*>(in[3]);
    const float* var = static_cast<const float*>(in[4]);
    float* y = static_cast<float*>(out[0]);
    for (int64_t n = 0; n < dims[0]; ++n)
      for (int64_t c = 0; c < channels; ++c) {
        double inv_std = 1.0 / std::sqrt(static_cast<double>(var[c]) + eps);
        int64_t base = (n * channels + c) * inner;
        for (int64_t i = 0; i < inner; ++i)
          y[base + i] = static_cast<float>(
              (x[base + i] - static_cast<double>(mean[c])) * inv_std * scale[c] + bias[c]);
      }
  };
  return schema;
}

}  // namespace nanoc
