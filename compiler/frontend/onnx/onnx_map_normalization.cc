// ONNX -> IR mappings of the normalization operators (LayerNormalization,
// RMSNormalization, InstanceNormalization, GroupNormalization,
// MeanVarianceNormalization, LpNormalization, LRN) and of LogSoftmax and
// Hardmax, which follow Softmax's opset rules; Attention's is in
// onnx_map_attention.cc.
#include <algorithm>
#include <numeric>

#include "compiler/frontend/onnx/onnx_mapping_util.h"
#include "compiler/passes/shape_inference.h"

namespace nanoc::onnx_import {
namespace {

constexpr double kDefaultEpsilon = 1e-5;

// stash_type says in which precision the statistics are computed; the IR
// computes them in f32 (ONNX's default, 1 = FLOAT).
void requireFloatStash(const NodeImporter& n) {
  int64_t stash = n.intAttr("stash_type", 1);
  if (stash != 1)
    n.fail("stash_type " + std::to_string(stash) +
           " is not supported: nanoc computes the statistics in float (stash_type = 1)");
}

// LayerNormalization (opset 17): outputs Y and, when the model names them, the
// row statistics Mean and InvStdDev, all three from one IR node.
void mapLayerNormalization(NodeImporter& n) {
  Value* x = n.requiredInput(0, "X");
  Value* scale = n.requiredInput(1, "Scale");
  Value* bias = n.input(2);
  requireFloatStash(n);
  int64_t axis = normalizeAxis(n, n.intAttr("axis", -1), rankOf(x));
  if (n.proto().output_size() < 1 || n.proto().output(0).empty()) n.fail("has no output");
  // Statistics the model does not name get fresh names (values nothing reads).
  std::vector<std::string> names;
  const char* hints[] = {"Y", "Mean", "InvStdDev"};
  for (int i = 0; i < 3; ++i) {
    if (i < n.proto().output_size() && !n.proto().output(i).empty())
      names.push_back(n.proto().output(i));
    else
      names.push_back(n.graph().uniqueName(n.name() + "/" + hints[i]));
  }
  std::vector<Value*> inputs = {x, scale};
  if (bias) inputs.push_back(bias);
  Node* node = n.graph().addNode("LayerNormalization", n.name(), inputs, 3, names);
  node->attrs = {{"axis", axis}, {"epsilon", n.floatAttr("epsilon", kDefaultEpsilon)}};
  inferNode(*node);
  for (size_t i = 0; i < 3; ++i)
    if (i < static_cast<size_t>(n.proto().output_size())) n.setOutput(i, node->outputs[i]);
}

// RMSNormalization (opset 23).
void mapRMSNormalization(NodeImporter& n) {
  Value* x = n.requiredInput(0, "X");
  Value* scale = n.requiredInput(1, "scale");
  requireFloatStash(n);
  n.emitResult("RMSNormalization", {x, scale},
               {{"axis", normalizeAxis(n, n.intAttr("axis", -1), rankOf(x))},
                {"epsilon", n.floatAttr("epsilon", kDefaultEpsilon)}});
}

// InstanceNormalization (opsets 1, 6, 22; opset 1's consumed_inputs is a
// legacy in-place hint with no effect on the result).
void mapInstanceNormalization(NodeImporter& n) {
  n.emitResult("InstanceNormalization",
               {n.requiredInput(0, "input"), n.requiredInput(1, "scale"), n.requiredInput(2, "B")},
               {{"epsilon", n.floatAttr("epsilon", kDefaultEpsilon)}});
}

// GroupNormalization: opset 18 takes scale and bias per group ([num_groups]),
// opset 21 per channel ([C]); the IR op accepts both.
void mapGroupNormalization(NodeImporter& n) {
  Value* x = n.requiredInput(0, "X");
  Value* scale = n.requiredInput(1, "scale");
  Value* bias = n.requiredInput(2, "bias");
  std::optional<int64_t> groups = n.intAttr("num_groups");
  if (!groups) n.fail("attribute 'num_groups' is missing");
  if (rankOf(x) < 2) n.fail("X must have rank >= 2 ([N, C, ...]), got " + x->type.str());
  requireFloatStash(n);
  std::vector<int64_t> want = {n.opset() >= 21 ? x->type.dims[1] : *groups};
  for (const Value* v : {scale, bias})
    if (v->type.dims != want)
      n.fail("scale and bias must be " + dimsStr(want) + " in opset " + std::to_string(n.opset()) +
             ", got " + v->type.str());
  n.emitResult("GroupNormalization", {x, scale, bias},
               {{"num_groups", *groups}, {"epsilon", n.floatAttr("epsilon", kDefaultEpsilon)}});
}

// MeanVarianceNormalization (opsets 9, 13) normalizes over `axes`; the IR op
// normalizes over trailing axes, so other axes are transposed to the end and
// back.
void mapMeanVarianceNormalization(NodeImporter& n) {
  Value* x = n.requiredInput(0, "X");
  int64_t rank = rankOf(x);
  std::vector<int64_t> axes = n.intsAttr("axes").value_or(std::vector<int64_t>{0, 2, 3});
  if (axes.empty()) n.fail("attribute 'axes' is empty");
  for (int64_t& a : axes) a = normalizeAxis(n, a, rank);
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end())
    n.fail("attribute 'axes' repeats an axis: " + dimsStr(axes));
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < rank; ++d)
    if (!std::binary_search(axes.begin(), axes.end(), d)) perm.push_back(d);
  int64_t kept = static_cast<int64_t>(perm.size());
  perm.insert(perm.end(), axes.begin(), axes.end());
  std::map<std::string, Attr> attrs = {{"axis", kept}};
  std::vector<int64_t> identity(static_cast<size_t>(rank));
  std::iota(identity.begin(), identity.end(), 0);
  if (perm == identity) {
    n.emitResult("MeanVarianceNormalization", {x}, attrs);
    return;
  }
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[static_cast<size_t>(perm[i])] = int64_t(i);
  Value* xt = n.emit("Transpose", {x}, {{"perm", perm}}, "axes_last");
  Value* yt = n.emit("MeanVarianceNormalization", {xt}, attrs, "normalize");
  n.emitResult("Transpose", {yt}, {{"perm", inverse}});
}

// LpNormalization (opsets 1, 22).
void mapLpNormalization(NodeImporter& n) {
  Value* x = n.requiredInput(0, "input");
  n.emitResult(
      "LpNormalization", {x},
      {{"axis", normalizeAxis(n, n.intAttr("axis", -1), rankOf(x))}, {"p", n.intAttr("p", 2)}});
}

// LRN (opsets 1, 13).
void mapLRN(NodeImporter& n) {
  std::optional<int64_t> size = n.intAttr("size");
  if (!size) n.fail("attribute 'size' is missing");
  n.emitResult("LRN", {n.requiredInput(0, "X")},
               {{"size", *size},
                {"alpha", n.floatAttr("alpha", 1e-4)},
                {"beta", n.floatAttr("beta", 0.75)},
                {"bias", n.floatAttr("bias", 1.0)}});
}

// LogSoftmax and Hardmax: one axis from opset 13; before, the input is
// flattened to 2-D at `axis` (default 1) and the op runs over everything from
// `axis` on, which the IR spells as Reshapes around the one-axis op.
void mapSoftmaxLike(NodeImporter& n) {
  const std::string& op = n.proto().op_type();
  Value* x = n.requiredInput(0, "input");
  int64_t rank = rankOf(x);
  if (n.opset() >= 13) {
    n.emitResult(op, {x}, {{"axis", normalizeAxis(n, n.intAttr("axis", -1), rank)}});
    return;
  }
  int64_t axis = normalizeAxis(n, n.intAttr("axis", 1), rank, /*inclusive_end=*/true);
  if (axis == rank - 1) {
    n.emitResult(op, {x}, {{"axis", axis}});
    return;
  }
  const std::vector<int64_t>& dims = x->type.dims;
  auto a = static_cast<size_t>(axis);
  std::vector<int64_t> flat = {product(dims, 0, a), product(dims, a, dims.size())};
  Value* x2d = n.emit("Reshape", {x}, {{"shape", flat}}, "to_2d");
  Value* y2d = n.emit(op, {x2d}, {{"axis", int64_t{1}}});
  n.emitResult("Reshape", {y2d}, {{"shape", dims}}, "from_2d");
}

}  // namespace

void mapAttention(NodeImporter& n);        // onnx_map_attention.cc
void mapRotaryEmbedding(NodeImporter& n);  // onnx_map_rotary_embedding.cc

MappingList normalizationMappings() {
  return {
      {"Attention", mapAttention},
      {"GroupNormalization", mapGroupNormalization},
      {"Hardmax", mapSoftmaxLike},
      {"InstanceNormalization", mapInstanceNormalization},
      {"LRN", mapLRN},
      {"LayerNormalization", mapLayerNormalization},
      {"LogSoftmax", mapSoftmaxLike},
      {"LpNormalization", mapLpNormalization},
      {"MeanVarianceNormalization", mapMeanVarianceNormalization},
      {"RMSNormalization", mapRMSNormalization},
      {"RotaryEmbedding", mapRotaryEmbedding},
  };
}

}  // namespace nanoc::onnx_import
