// Relu, Sigmoid, Tanh: f32 elementwise, output type = input type.
#include <cmath>

#include "compiler/ir/op_registry.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc {
namespace {

template <typename Fn>
OpSchema makeUnary(const char* name, Fn fn) {
  OpSchema schema;
  schema.name = name;
  schema.infer = [](const Node& node) {
    const TensorType& x = inputType(node, 0);
    requireF32(node);
    return std::vector<TensorType>{x};
  };
  schema.reference = [fn](const Node& node, const std::vector<const void*>& in,
                          const std::vector<void*>& out) {
    const float* x = static_cast<const float*>(in[0]);
    float* y = static_cast<float*>(out[0]);
    int64_t n = node.outputs[0]->type.numel();
    for (int64_t i = 0; i < n; ++i) y[i] = fn(x[i]);
  };
  return schema;
}

}  // namespace

// NaN propagates, as in ONNX Runtime: NaN < 0 is false, so NaN is returned.
OpSchema makeReluSchema() {
  return makeUnary("Relu", [](float x) { return x < 0.0f ? 0.0f : x; });
}

// Evaluated in double, so the oracle is accurate to the last f32 bit and
// saturates cleanly for large |x| (exp overflow gives 1/(1+inf) = 0).
OpSchema makeSigmoidSchema() {
  return makeUnary("Sigmoid", [](float x) {
    return static_cast<float>(1.0 / (1.0 + std::exp(-static_cast<double>(x))));
  });
}

OpSchema makeTanhSchema() {
  return makeUnary("Tanh",
                   [](float x) { return static_cast<float>(std::tanh(static_cast<double>(x))); });
}

}  // namespace nanoc
