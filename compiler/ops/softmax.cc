// Softmax, LogSoftmax and Hardmax over the one axis `axis` (ONNX opset >= 13
// semantics). The tensor is viewed as [outer, n, inner] with n the axis.
// X and Y are f32, f16 or bf16 (half precision computed in f32 by the
// lowerings, rounded once).
#include <algorithm>
#include <cmath>
#include <limits>

#include "compiler/ir/op_registry.h"
#include "compiler/ops/float_elements.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc {
namespace {

std::vector<TensorType> inferAxisOp(const Node& node) {
  const TensorType& x = inputType(node, 0);
  if (x.dtype != DType::F32 && x.dtype != DType::F16 && x.dtype != DType::BF16)
    failNode(node, "X must be f32, f16 or bf16, got " + x.str());
  int64_t axis = node.i("axis");
  if (axis < 0 || axis >= static_cast<int64_t>(x.rank()))
    failNode(node, "attribute 'axis' is " + std::to_string(axis) + ", must be in [0, " +
                       std::to_string(x.rank()) + ") for " + x.str());
  return std::vector<TensorType>{x};
}

// For each of the outer * inner lines along the axis: row(xs, ys) with the
// line of input 0 in xs (as double) and ys, of the same length, stored into
// the line of output 0 afterwards.
template <typename RowFn>
void forEachLine(const Node& node, const std::vector<const void*>& in,
                 const std::vector<void*>& out, RowFn row) {
  const TensorType& t = node.inputs[0]->type;
  auto axis = static_cast<size_t>(node.i("axis"));
  int64_t outer = product(t.dims, 0, axis);
  int64_t len = t.dims[axis];
  int64_t inner = product(t.dims, axis + 1, t.dims.size());
  std::vector<double> xs(static_cast<size_t>(len)), ys(static_cast<size_t>(len));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      int64_t base = o * len * inner + i;
      for (int64_t j = 0; j < len; ++j) xs[j] = loadFloat(t.dtype, in[0], base + j * inner);
      row(xs, ys);
      for (int64_t j = 0; j < len; ++j) storeFloat(t.dtype, out[0], base + j * inner, ys[j]);
    }
}

double maxOf(const std::vector<double>& xs) {
  double max = -std::numeric_limits<double>::infinity();
  for (double x : xs) max = std::max(max, x);
  return max;
}

}  // namespace

OpSchema makeSoftmaxSchema() {
  OpSchema schema;
  schema.name = "Softmax";
  schema.infer = inferAxisOp;
  schema.reference = [](const Node& node, const std::vector<const void*>& in,
                        const std::vector<void*>& out) {
    forEachLine(node, in, out, [](const std::vector<double>& xs, std::vector<double>& ys) {
      // Subtracting the max keeps every exp in (0, 1]: no overflow.
      double max = maxOf(xs), sum = 0;
      for (size_t j = 0; j < xs.size(); ++j) sum += ys[j] = std::exp(xs[j] - max);
      for (double& y : ys) y /= sum;
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
    forEachLine(node, in, out, [](const std::vector<double>& xs, std::vector<double>& ys) {
      double max = maxOf(xs), sum = 0;
      for (double x : xs) sum += std::exp(x - max);
      double log_sum = std::log(sum);
      for (size_t j = 0; j < xs.size(); ++j) ys[j] = xs[j] - max - log_sum;
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
    forEachLine(node, in, out, [](const std::vector<double>& xs, std::vector<double>& ys) {
      size_t best = 0;
      for (size_t j = 0; j < xs.size(); ++j) {
        if (xs[j] > xs[best]) best = j;
        ys[j] = 0;
      }
      if (!ys.empty()) ys[best] = 1;
    });
  };
  return schema;
}

}  // namespace nanoc
