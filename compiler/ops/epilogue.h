// The epilogue that passes/fuse_epilogue.h folds into the node producing a
// matrix product or convolution (the anchor: Conv, nanoc.ConvGemm, Gemm,
// MatMul), applied to each output element before the anchor's one store:
//
//   Y = act(product + residual)
//
// as attributes and one input of the anchor:
//   input kResidualInput (3): the residual, a tensor of Y's exact type (no
//     broadcast); absent (no such input) when there is none. The optional
//     inputs before it are null where absent (MatMul's input 2 is its fused
//     bias, if any).
//   fused_activation: "Relu", "Clip", "LeakyRelu", "Sigmoid", "HardSigmoid",
//     "HardSwish", "SiLU" (x * sigmoid(x)) or "Tanh"; absent: none.
//   fused_alpha, fused_beta: Clip's min and max, LeakyRelu's alpha,
//     HardSigmoid's alpha and beta (absent for the others).
// Each anchor's shape rule checks them (checkEpilogue) and its reference
// applies them (applyEpilogue), so constant folding and the kernel tests see
// the fused node's semantics.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "compiler/ir/graph.h"

namespace nanoc {

enum class Activation { None, Relu, Clip, LeakyRelu, Sigmoid, HardSigmoid, HardSwish, SiLU, Tanh };

constexpr size_t kResidualInput = 3;

struct EpilogueSpec {
  Activation activation = Activation::None;
  double alpha = 0.0, beta = 0.0;
  bool residual = false;
  bool empty() const { return activation == Activation::None && !residual; }
};

// The activation named `name` ("Relu", ...), or None for an unknown name.
Activation activationByName(const std::string& name);
const char* activationName(Activation activation);
// Whether the activation reads fused_alpha / fused_beta.
bool activationHasAlpha(Activation activation);
bool activationHasBeta(Activation activation);

// Whether the node has a residual input (kResidualInput present, not null).
inline bool hasResidual(const Node& node) {
  return node.inputs.size() > kResidualInput && node.inputs[kResidualInput];
}

// Decodes the node's epilogue; fails naming the node on an unknown
// activation, a missing or non-finite parameter (Clip's bounds may be
// infinite), or a residual whose type differs from `output`.
EpilogueSpec checkEpilogue(const Node& node, const TensorType& output);
// The same, trusting the node (shape inference has checked it).
EpilogueSpec epilogueSpec(const Node& node);

// act(x) in double, with the elementwise ops' reference formulas.
double activate(const EpilogueSpec& spec, double x);

// y[i] = act(y[i] + residual[i]) for i < count (residual null: none).
void applyEpilogue(const EpilogueSpec& spec, float* y, const float* residual, int64_t count);

}  // namespace nanoc
