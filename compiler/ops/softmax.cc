// Softmax, LogSoftmax and Hardmax over the one axis `axis` (ONNX opset >= 13
// semantics). The tensor is viewed as [outer, n, inner] with n the axis.
#include <algorithm>
#include <cmath>
#include <limits>

#include "compiler/ir/op_registry.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc {
namespace {

std::vector<TensorType> inferAxisOp(const Node& node) {
  const TensorType& x = inputType(node, 0);
  requireF32(node);
  int64_t axis = node.i("axis");
  if (axis < 0 || axis >= static_cast<int64_t>(x.rank()))
    failNode(node, "attribute 'axis' is " + std::to_string(axis) + ", must be in [0, " +
                       std::to_string(x.rank()) + ") for " + x.str());
  return std::vector<TensorType>{x};
}

// Calls row(xs, ys, len, stride) for each of the outer * inner lines along
// the axis of the node's input 0 and output 0.
template <typename RowFn>
void forEachLine(const Node& node, const std::vector<const void*>& in,
                 const std::vector<void*>& out, RowFn row) {
  const std::vector<int64_t>& dims = node.inputs[0]->type.dims;
  auto axis = static_cast<size_t>(node.i("axis"));
  int64_t outer = product(dims, 0, axis);
  int64_t len = dims[axis];
  int64_t inner = product(dims, axis + 1, dims.size());
  const float* x = static_cast<const float*>(in[0]);
  float* y = static_cast<float*>(out[0]);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i)
      row(x + o * len * inner + i, y + o * len * inner + i, len, inner);
}

}  // namespace

OpSchema makeSoftmaxSchema() {
  OpSchema schema;
  schema.name = "Softmax";
  schema.infer = inferAxisOp;
  schema.reference = [](const Node& node, const std::vector<const void*>& in,
                        const std::vector<void*>& out) {
    forEachLine(node, in, out, [](const float* xs, float* ys, int64_t len, int64_t stride) {
      // Subtracting the max keeps every exp in (0, 1]: no overflow.
      float max = -std::numeric_limits<float>::infinity();
      for (int64_t j = 0; j < len; ++j) max = std::max(max, xs[j * stride]);
      double sum = 0;
      for (int64_t j = 0; j < len; ++j) sum += std::exp(static_cast<double>(xs[j * stride]) - max);
      for (int64_t j = 0; j < len; ++j)
        ys[j * stride] =
            static_cast<float>(std::exp(static_cast<double>(xs[j * stride]) - max) / sum);
    });
  };
  return schema;
}

// y = x - max - log(sum e^(x - max)).
OpSchema makeLogSoftmaxSchema() {
  OpSchema schema;
  schema.name = "LogSoftmax";
  schema.infer = inferAxisOp;
  schema.reference = [](const Node& node, const std::vector<const void*>& in,
                        const std::vector<void*>& out) {
    forEachLine(node, in, out, [](const float* xs, float* ys, int64_t len, int64_t stride) {
      float max = -std::numeric_limits<float>::infinity();
      for (int64_t j = 0; j < len; ++j) max = std::max(max, xs[j * stride]);
      double sum = 0;
      for (int64_t j = 0; j < len; ++j) sum += std::exp(static_cast<double>(xs[j * stride]) - max);
      double log_sum = std::log(sum);
      for (int64_t j = 0; j < len; ++j)
        ys[j * stride] = static_cast<float>(static_cast<double>(xs[j * stride]) - max - log_sum);
    });
  };
  return schema;
}

// 1 at the first largest element along the axis, 0 elsewhere.
OpSchema makeHardmaxSchema() {
  OpSchema schema;
  schema.name = "Hardmax";
  schema.infer = inferAxisOp;
  schema.reference = [](const Node& node, const std::vector<const void*>& in,
                        const std::vector<void*>& out) {
    forEachLine(node, in, out, [](const float* xs, float* ys, int64_t len, int64_t stride) {
      int64_t best = 0;
      for (int64_t j = 0; j < len; ++j) {
        if (xs[j * stride] > xs[best * stride]) best = j;
        ys[j * stride] = 0.0f;
      }
      if (len > 0) ys[best * stride] = 1.0f;
    });
  };
  return schema;
}

}  // namespace nanoc
