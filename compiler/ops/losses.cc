// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss: shape rules and
// references. Both see the input as [N, C, D] (D the product of the dims
// after C, 1 for a 2-D input) and the target as [N, D].
//
// A target equal to ignore_index, or outside [0, C) (which ONNX leaves
// undefined), contributes a loss and a weight of 0. "mean" divides the summed
// loss by the summed weights of the contributing targets (their count without
// a weight input).
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "compiler/ir/op_registry.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc {
namespace {

bool isLossFloat(DType d) { return d == DType::F32 || d == DType::F64; }

// Checks the operands and attributes; returns the loss output's type.
TensorType lossType(const Node& node) {
  const TensorType& x = inputType(node, 0);
  const TensorType& t = inputType(node, 1);
  if (!isLossFloat(x.dtype)) failNode(node, "input is " + x.str() + "; f32 or f64 only");
  if (x.rank() < 2) failNode(node, "input " + x.str() + " must have rank >= 2 ([N, C, ...])");
  if (t.dtype != DType::I64 && t.dtype != DType::I32)
    failNode(node, "target is " + t.str() + "; it must be i32 or i64");
  std::vector<int64_t> want = {x.dims[0]};
  want.insert(want.end(), x.dims.begin() + 2, x.dims.end());
  if (t.dims != want)
    failNode(node, "target " + t.str() + " does not match input " + x.str() + " (want " +
                       dimsStr(want) + ")");
  if (node.inputs.size() > 2 && node.inputs[2]) {
    const TensorType& w = node.inputs[2]->type;
    if (w.dtype != x.dtype || w.dims != std::vector<int64_t>{x.dims[1]})
      failNode(node, "weight " + w.str() + " must be " + std::string(dtypeName(x.dtype)) + "[" +
                         std::to_string(x.dims[1]) + "]");
  }
  const std::string& reduction = node.s("reduction");
  if (reduction == "none") return {x.dtype, want};
  if (reduction == "sum" || reduction == "mean") return {x.dtype, {}};
  failNode(node, "attribute 'reduction' is '" + reduction + "', not none, sum or mean");
}

template <typename T>
void nllTyped(const Node& node, const T* x, const void* target, const T* weight, T* loss) {
  const TensorType& xt = node.inputs[0]->type;
  int64_t n = xt.dims[0], c = xt.dims[1], d = product(xt.dims, 2, xt.rank());
  bool t32 = node.inputs[1]->type.dtype == DType::I32;
  int64_t ignore = node.i("ignore_index");
  const std::string& reduction = node.s("reduction");
  double loss_sum = 0, weight_sum = 0;
  for (int64_t i = 0; i < n * d; ++i) {
    int64_t t =
        t32 ? static_cast<const int32_t*>(target)[i] : static_cast<const int64_t*>(target)[i];
    bool valid = t != ignore && t >= 0 && t < c;
    double w = valid ? (weight ? static_cast<double>(weight[t]) : 1.0) : 0.0;
    double l = valid ? -static_cast<double>(x[((i / d) * c + t) * d + i % d]) * w : 0.0;
    if (reduction == "none") loss[i] = static_cast<T>(l);
    loss_sum += l;
    weight_sum += w;
  }
  if (reduction == "sum") loss[0] = static_cast<T>(loss_sum);
  if (reduction == "mean") loss[0] = static_cast<T>(loss_sum / weight_sum);
}

template <typename T>
void logSoftmaxTyped(const TensorType& xt, const T* x, T* y) {
  int64_t n = xt.dims[0], c = xt.dims[1], d = product(xt.dims, 2, xt.rank());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < d; ++j) {
      auto at = [&](int64_t k) { return (i * c + k) * d + j; };
      double m = -std::numeric_limits<double>::infinity();
      for (int64_t k = 0; k < c; ++k) m = std::max(m, static_cast<double>(x[at(k)]));
      double s = 0;
      for (int64_t k = 0; k < c; ++k) s += std::exp(static_cast<double>(x[at(k)]) - m);
      double lse = m + std::log(s);
      for (int64_t k = 0; k < c; ++k)
        y[at(k)] = static_cast<T>(static_cast<double>(x[at(k)]) - lse);
    }
}

void checkAttrs(const Node& node) { node.i("ignore_index"); }

OpSchema makeNllSchema() {
  OpSchema schema;
  schema.name = "NegativeLogLikelihoodLoss";
  schema.min_inputs = 2;
  schema.max_inputs = 3;
  schema.infer = [](const Node& node) {
    checkAttrs(node);
    return std::vector<TensorType>{lossType(node)};
  };
  schema.reference = [](const Node& node, const std::vector<const void*>& in,
                        const std::vector<void*>& out) {
    const void* w = in.size() > 2 ? in[2] : nullptr;
    if (node.inputs[0]->type.dtype == DType::F64)
      nllTyped(node, static_cast<const double*>(in[0]), in[1], static_cast<const double*>(w),
               static_cast<double*>(out[0]));
    else
      nllTyped(node, static_cast<const float*>(in[0]), in[1], static_cast<const float*>(w),
               static_cast<float*>(out[0]));
  };
  return schema;
}

OpSchema makeSceSchema() {
  OpSchema schema;
  schema.name = "SoftmaxCrossEntropyLoss";
  schema.min_inputs = 2;
  schema.max_inputs = 3;
  schema.num_outputs = 2;  // loss, log_prob
  schema.infer = [](const Node& node) {
    checkAttrs(node);
    return std::vector<TensorType>{lossType(node), node.inputs[0]->type};
  };
  schema.reference = [](const Node& node, const std::vector<const void*>& in,
                        const std::vector<void*>& out) {
    const TensorType& xt = node.inputs[0]->type;
    const void* w = in.size() > 2 ? in[2] : nullptr;
    if (xt.dtype == DType::F64) {
      logSoftmaxTyped(xt, static_cast<const double*>(in[0]), static_cast<double*>(out[1]));
      nllTyped(node, static_cast<const double*>(out[1]), in[1], static_cast<const double*>(w),
               static_cast<double*>(out[0]));
    } else {
      logSoftmaxTyped(xt, static_cast<const float*>(in[0]), static_cast<float*>(out[1]));
      nllTyped(node, static_cast<const float*>(out[1]), in[1], static_cast<const float*>(w),
               static_cast<float*>(out[0]));
    }
  };
  return schema;
}

}  // namespace

std::vector<OpSchema> lossSchemas() { return {makeNllSchema(), makeSceSchema()}; }

}  // namespace nanoc
