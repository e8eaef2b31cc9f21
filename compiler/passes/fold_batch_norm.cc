#include "compiler/passes/fold_batch_norm.h"

#include <cmath>
#include <map>

namespace nanoc {
namespace {

bool isF32Constant(const Value* v) { return v && v->isConstant() && v->type.dtype == DType::F32; }

}  // namespace

int foldBatchNormIntoConv(Graph& graph) {
  std::map<const Value*, int> uses = countUses(graph);

  int folded = 0;
  for (const auto& bn : graph.nodes) {
    if (bn->op != "BatchNormalization") continue;
    Value* y = bn->inputs[0];
    Node* conv = y->producer;
    if (!conv || conv->op != "Conv" || uses[y] != 1) continue;
    const Value* w = conv->inputs[1];
    const Value* b = conv->inputs.size() > 2 ? conv->inputs[2] : nullptr;
    bool constant_params = isF32Constant(w) && (!b || isF32Constant(b));
    for (size_t i = 1; i < 5; ++i)
      constant_params = constant_params && isF32Constant(bn->inputs[i]);
    if (!constant_params) continue;

    int64_t channels = w->type.dims[0];
    int64_t per_channel = w->type.numel() / std::max<int64_t>(channels, 1);
    const float* scale = bn->inputs[1]->as<float>();
    const float* bias = bn->inputs[2]->as<float>();
    const float* mean = bn->inputs[3]->as<float>();
    const float* var = bn->inputs[4]->as<float>();
    double eps = bn->f("epsilon");
    std::vector<float> new_w(w->as<float>(), w->as<float>() + w->type.numel());
    std::vector<float> new_b(channels);
    for (int64_t m = 0; m < channels; ++m) {
      double s = scale[m] / std::sqrt(static_cast<double>(var[m]) + eps);
      for (int64_t k = 0; k < per_channel; ++k)
        new_w[m * per_channel + k] = static_cast<float>(new_w[m * per_channel + k] * s);
      double conv_bias = b ? b->as<float>()[m] : 0.0;
      new_b[m] = static_cast<float>((conv_bias - mean[m]) * s + bias[m]);
    }
    Value* w2 = graph.addConstant(w->name + "_bn", w->type, f32Bytes(new_w));
    Value* b2 = graph.addConstant((b ? b->name : conv->name + "_bias") + "_bn",
                                  {DType::F32, {channels}}, f32Bytes(new_b));
    conv->inputs.resize(3);
    conv->inputs[1] = w2;
    conv->inputs[2] = b2;
    // The Conv now produces the BN's result value itself, so its name (maybe a
    // graph output's, which users refer to) stays; the BN is left reading the
    // old result and writing a fresh value nothing uses, for DCE to drop.
    Value* result = bn->outputs[0];
    Value* unused = graph.newValue(result->name + "_unfolded");
    unused->type = result->type;
    unused->typed = true;
    unused->producer = bn.get();
    bn->outputs[0] = unused;
    conv->outputs[0] = result;
    result->producer = conv;
    y->producer = nullptr;
    ++folded;
  }
  return folded;
}

}  // namespace nanoc
