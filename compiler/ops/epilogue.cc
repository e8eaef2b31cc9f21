#include "compiler/ops/epilogue.h"

#include <algorithm>
#include <cmath>

#include "compiler/ops/schema_checks.h"

namespace nanoc {

namespace {

struct ActivationName {
  Activation activation;
  const char* name;
};
constexpr ActivationName kNames[] = {
    {Activation::Relu, "Relu"},
    {Activation::Clip, "Clip"},
    {Activation::LeakyRelu, "LeakyRelu"},
    {Activation::Sigmoid, "Sigmoid"},
    {Activation::HardSigmoid, "HardSigmoid"},
    {Activation::HardSwish, "HardSwish"},
    {Activation::SiLU, "SiLU"},
    {Activation::Tanh, "Tanh"},
};

}  // namespace

Activation activationByName(const std::string& name) {
  for (const ActivationName& a : kNames)
    if (name == a.name) return a.activation;
  return Activation::None;
}

const char* activationName(Activation activation) {
  for (const ActivationName& a : kNames)
    if (a.activation == activation) return a.name;
  return "None";
}

bool activationHasAlpha(Activation a) {
  return a == Activation::Clip || a == Activation::LeakyRelu || a == Activation::HardSigmoid;
}

bool activationHasBeta(Activation a) {
  return a == Activation::Clip || a == Activation::HardSigmoid;
}

EpilogueSpec epilogueSpec(const Node& node) {
  EpilogueSpec spec;
  if (node.has("fused_activation")) {
    spec.activation = activationByName(node.s("fused_activation"));
    if (activationHasAlpha(spec.activation)) spec.alpha = node.f("fused_alpha");
    if (activationHasBeta(spec.activation)) spec.beta = node.f("fused_beta");
  }
  spec.residual = hasResidual(node);
  return spec;
}

EpilogueSpec checkEpilogue(const Node& node, const TensorType& output) {
  if (node.has("fused_activation")) {
    const std::string& name = node.s("fused_activation");
    Activation a = activationByName(name);
    if (a == Activation::None) failNode(node, "unknown fused_activation '" + name + "'");
    for (const char* key : {"fused_alpha", "fused_beta"}) {
      bool wanted = key[6] == 'a' ? activationHasAlpha(a) : activationHasBeta(a);
      if (!wanted) {
        if (node.has(key)) failNode(node, std::string("'") + key + "' is not used by " + name);
        continue;
      }
      if (!node.has(key)) failNode(node, name + " needs attribute '" + key + "'");
      double v = node.f(key);
      if (std::isnan(v) || (a != Activation::Clip && !std::isfinite(v)))
        failNode(node, std::string("attribute '") + key + "' is not finite");
    }
  } else {
    for (const char* key : {"fused_alpha", "fused_beta"})
      if (node.has(key)) failNode(node, std::string("'") + key + "' without fused_activation");
  }
  if (hasResidual(node)) {
    const TensorType& r = node.inputs[kResidualInput]->type;
    if (r != output)
      failNode(node, "residual " + r.str() + " must have the output's type " + output.str());
  }
  return epilogueSpec(node);
}

double activate(const EpilogueSpec& spec, double x) {
  switch (spec.activation) {
    case Activation::None:
      return x;
    case Activation::Relu:
      return x < 0 ? 0.0 : x;
    case Activation::Clip:
      // NaN stays NaN, as Clip's reference.
      if (x < spec.alpha) x = spec.alpha;
      if (x > spec.beta) x = spec.beta;
      return x;
    case Activation::LeakyRelu:
      return x < 0 ? spec.alpha * x : x;
    case Activation::Sigmoid:
      return 1.0 / (1.0 + std::exp(-x));
    case Activation::HardSigmoid:
      return std::fmax(0.0, std::fmin(1.0, spec.alpha * x + spec.beta));
    case Activation::HardSwish:
      return x * std::fmax(0.0, std::fmin(1.0, x / 6.0 + 0.5));
    case Activation::SiLU:
      return x / (1.0 + std::exp(-x));
    case Activation::Tanh:
      return std::tanh(x);
  }
  return x;
}

void applyEpilogue(const EpilogueSpec& spec, float* y, const float* residual, int64_t count) {
  if (spec.empty()) return;
  for (int64_t i = 0; i < count; ++i) {
    // The residual add rounds to f32, as the Add it replaces did.
    float v = residual ? y[i] + residual[i] : y[i];
    y[i] = static_cast<float>(activate(spec, v));
  }
}

}  // namespace nanoc
