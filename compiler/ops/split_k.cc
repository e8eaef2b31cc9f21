// nanoc.SplitKSum: see split_k.h.
#include "compiler/ops/split_k.h"

#include <algorithm>
#include <vector>

#include "compiler/ir/op_registry.h"
#include "compiler/ops/epilogue.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc {

int64_t splitKChunk(const Node& node) { return node.i(kSplitKChunkAttribute, 0); }

KSlices kSlicesOf(const Node& node, int64_t k) {
  const int64_t chunk = splitKChunk(node);
  if (chunk <= 0) return KSlices{std::max<int64_t>(k, 1), 1};
  return KSlices{chunk, splitKSlices(k, chunk)};
}

void addSplitKSlices(const Node& node, int64_t k, TensorType& y) {
  const int64_t chunk = splitKChunk(node);
  if (chunk == 0) return;
  if (chunk < 0) failNode(node, "split_k_chunk must be positive, got " + std::to_string(chunk));
  if (node.inputs.size() > 2 || node.has("fused_activation"))
    failNode(node, "a product split along K takes no bias, C, residual or activation");
  if (node.op == "Gemm" && node.has("alpha") && node.f("alpha") != 1.0)
    failNode(node, "a Gemm split along K must have alpha 1");
  y.dims.insert(y.dims.begin(), splitKSlices(k, chunk));
}

namespace {

// The epilogue's activation, and whether there is a residual (input 2 here,
// not kResidualInput).
EpilogueSpec splitKEpilogue(const Node& node, const TensorType& y) {
  Node attrs_only;
  attrs_only.name = node.name;
  attrs_only.attrs = node.attrs;
  EpilogueSpec spec = checkEpilogue(attrs_only, y);
  spec.residual = node.inputs.size() > kSplitKResidualInput && node.inputs[kSplitKResidualInput];
  return spec;
}

OpSchema makeSplitKSumSchema() {
  OpSchema schema;
  schema.name = "nanoc.SplitKSum";
  schema.min_inputs = 1;
  schema.max_inputs = 3;
  schema.infer = [](const Node& node) {
    const TensorType& p = inputType(node, 0);
    if (p.dtype != DType::F32 || p.rank() < 2)
      failNode(node, "P must be f32 of rank >= 2, got " + p.str());
    if (p.dims[0] < 1) failNode(node, "P needs at least one slice, got " + p.str());
    TensorType y{DType::F32, std::vector<int64_t>(p.dims.begin() + 1, p.dims.end())};
    if (node.inputs.size() > kSplitKBiasInput && node.inputs[kSplitKBiasInput]) {
      const TensorType& bias = inputType(node, kSplitKBiasInput);
      bool row = bias.dtype == DType::F32 && bias.rank() >= 1 &&
                 bias.dims.back() == y.dims.back() && bias.numel() == y.dims.back();
      if (!row)
        failNode(node, "bias must be f32 [" + std::to_string(y.dims.back()) + "] or [1, ..., 1, " +
                           std::to_string(y.dims.back()) + "], got " + bias.str());
    }
    if (node.inputs.size() > kSplitKResidualInput && node.inputs[kSplitKResidualInput]) {
      const TensorType& r = inputType(node, kSplitKResidualInput);
      if (r != y) failNode(node, "residual " + r.str() + " must have the output's type " + y.str());
    }
    splitKEpilogue(node, y);
    return std::vector<TensorType>{y};
  };
  schema.reference = [](const Node& node, const std::vector<const void*>& in,
                        const std::vector<void*>& out) {
    const TensorType& y = node.outputs[0]->type;
    const EpilogueSpec spec = splitKEpilogue(node, y);
    const int64_t slices = node.inputs[0]->type.dims[0], count = y.numel();
    const int64_t width = y.dims.back();
    const auto* p = static_cast<const float*>(in[0]);
    const auto* bias =
        in.size() > kSplitKBiasInput ? static_cast<const float*>(in[kSplitKBiasInput]) : nullptr;
    const auto* residual = in.size() > kSplitKResidualInput
                               ? static_cast<const float*>(in[kSplitKResidualInput])
                               : nullptr;
    auto* o = static_cast<float*>(out[0]);
    for (int64_t i = 0; i < count; ++i) {
      float v = p[i];
      for (int64_t s = 1; s < slices; ++s) v += p[s * count + i];
      if (bias) v += bias[i % width];
      o[i] = v;
    }
    applyEpilogue(spec, o, residual, count);
  };
  return schema;
}

}  // namespace

std::vector<OpSchema> splitKSchemas() { return {makeSplitKSumSchema()}; }

}  // namespace nanoc
