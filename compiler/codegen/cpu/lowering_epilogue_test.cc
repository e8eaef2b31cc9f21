// Fused epilogues (ops/epilogue.h) in every lowering that takes them: each
// activation, with and without a residual, on nanoc.ConvGemm (panels and X in
// place, two images, and its transposed product), nanoc.Winograd, the packed MatMul and Gemm, the
// row-product MatMul and Gemm, and the direct Conv, on every register tile this machine runs,
// against the anchor's reference (which applies the epilogue on the host).
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compiler/codegen/cpu/kernel_test_util.h"
#include "compiler/ops/epilogue.h"
#include "compiler/passes/shape_inference.h"

namespace nanoc::cpu {
namespace {

using testing::AlignedBuffer;
using Attrs = std::map<std::string, Attr>;
using Dims = std::vector<int64_t>;

TensorType f32(Dims dims) { return {DType::F32, std::move(dims)}; }

struct Activation {
  std::string name;  // empty: none
  Attrs attrs;
};

std::vector<Activation> activations() {
  const double inf = INFINITY;
  return {{"", {}},
          {"Relu", {}},
          {"Clip", {{"fused_alpha", -0.5}, {"fused_beta", 0.75}}},
          {"Clip", {{"fused_alpha", 0.0}, {"fused_beta", inf}}},
          {"LeakyRelu", {{"fused_alpha", 0.1}}},
          {"Sigmoid", {}},
          {"HardSigmoid", {{"fused_alpha", 0.2}, {"fused_beta", 0.5}}},
          {"HardSwish", {}},
          {"SiLU", {}},
          {"Tanh", {}}};
}

// One anchor: its inputs (nullopt: absent) and which of them are constants
// (the packed products pack a constant B at compile time).
struct Anchor {
  std::string op;
  std::vector<std::optional<TensorType>> inputs;
  Attrs attrs;
  std::vector<size_t> constants;
};

// The anchor with `act` and, if `residual`, a residual input 3 of its output
// type, on random data, against its reference on every tile.
void expectFusedMatches(const Anchor& anchor, const Activation& act, bool residual, uint64_t seed) {
  std::string what = anchor.op + " + " + (residual ? "residual + " : "") +
                     (act.name.empty() ? "no activation" : act.name);
  SCOPED_TRACE(what);
  Graph graph;
  std::vector<Value*> values;
  for (size_t i = 0; i < anchor.inputs.size(); ++i)
    values.push_back(anchor.inputs[i] ? graph.addInput("in" + std::to_string(i), *anchor.inputs[i])
                                      : nullptr);
  Node* node = graph.addNode(anchor.op, "n0", values, 1);
  node->attrs = anchor.attrs;
  inferNode(*node);
  if (residual) {
    node->inputs.resize(kResidualInput + 1, nullptr);
    node->inputs[kResidualInput] = graph.addInput("residual", node->outputs[0]->type);
  }
  if (!act.name.empty()) {
    node->attrs["fused_activation"] = act.name;
    for (const auto& [key, value] : act.attrs) node->attrs[key] = value;
  }
  inferNode(*node);
  ASSERT_EQ(epilogueSpec(*node).residual, residual);

  testing::expectMatchesOnEveryTile(*node, seed, what, anchor.constants);
}

void expectEveryEpilogue(const Anchor& anchor, uint64_t seed) {
  for (const Activation& act : activations())
    for (bool residual : {false, true}) {
      if (act.name.empty() && !residual) continue;
      expectFusedMatches(anchor, act, residual, seed++);
    }
}

Attrs convAttrs(Dims kernel, Dims pads, int64_t group) {
  return {{"kernel_shape", kernel},
          {"pads", pads},
          {"strides", Dims{1, 1}},
          {"dilations", Dims{1, 1}},
          {"group", group}};
}

TEST(EpilogueLowering, ConvGemmPanelsTwoImages) {
  // 110 pixels in panels of 96: a partial panel; 13 channels: a partial tile.
  expectEveryEpilogue({"nanoc.ConvGemm",
                       {f32({2, 2, 18, 96}), f32({13, 2, 3, 3}), f32({13})},
                       {{"panel", int64_t{96}}, {"output_spatial", Dims{10, 11}}},
                       {1}},
                      100);
}

TEST(EpilogueLowering, ConvGemmPointwiseWithoutBias) {
  expectEveryEpilogue({"nanoc.ConvGemm",
                       {f32({1, 16, 5, 41}), f32({12, 16, 1, 1}), std::nullopt},
                       {{"panel", int64_t{0}}, {"output_spatial", Dims{5, 41}}},
                       {1}},
                      200);
}

// The transposed product (pixel_rows): the epilogue on Y's rows after the
// tile's transpose, from Im2Col panels (two images, a bias) and from X in
// place through a strided 1x1 window (no bias).
TEST(EpilogueLowering, ConvGemmPixelRows) {
  expectEveryEpilogue({"nanoc.ConvGemm",
                       {f32({2, 3, 72, 24}), f32({1, 72, 96}), f32({50})},
                       {{"panel", int64_t{24}},
                        {"output_spatial", Dims{7, 7}},
                        {"out_channels", int64_t{50}},
                        {"pixel_rows", int64_t{96}}},
                       {1}},
                      250);
  expectEveryEpilogue({"nanoc.ConvGemm",
                       {f32({1, 16, 13, 13}), f32({1, 16, 96}), std::nullopt},
                       {{"panel", int64_t{24}},
                        {"output_spatial", Dims{7, 7}},
                        {"out_channels", int64_t{40}},
                        {"pixel_rows", int64_t{96}},
                        {"kernel_shape", Dims{1, 1}},
                        {"pads", Dims{0, 0, 0, 0}},
                        {"strides", Dims{2, 2}},
                        {"dilations", Dims{1, 1}}},
                       {1}},
                      270);
}

TEST(EpilogueLowering, PackedMatMul) {
  // Batches fold into 14 rows of a packed product; 19 columns: a partial panel.
  expectEveryEpilogue({"MatMul", {f32({2, 7, 20}), f32({20, 19})}, {}, {1}}, 300);
}

TEST(EpilogueLowering, MatMulWithFusedBias) {
  // A bias (input 2, [N] or [1, N]) added to the product before the residual
  // and the activation: packed (B constant), and the row-block product.
  expectEveryEpilogue({"MatMul", {f32({2, 7, 20}), f32({20, 19}), f32({1, 19})}, {}, {1, 2}}, 350);
  expectEveryEpilogue({"MatMul", {f32({3, 5, 20}), f32({3, 20, 19}), f32({19})}, {}, {}}, 390);
}

TEST(EpilogueLowering, RowProductMatMul) {
  // B is not a constant: the row-block product accumulating in Y (under 8
  // rows), and from 8 rows, columns and K on the register tile reading each
  // batch's B in place (13 rows: a whole tile and a tail; 19 columns: a
  // partial panel), with a fused bias too.
  expectEveryEpilogue({"MatMul", {f32({3, 5, 20}), f32({3, 20, 19})}, {}, {}}, 400);
  expectEveryEpilogue({"MatMul", {f32({3, 13, 20}), f32({3, 20, 19})}, {}, {}}, 410);
  expectEveryEpilogue({"MatMul", {f32({2, 13, 20}), f32({2, 20, 19}), f32({19})}, {}, {}}, 420);
}

TEST(EpilogueLowering, PackedGemm) {
  expectEveryEpilogue(
      {"Gemm",
       {f32({13, 20}), f32({19, 20}), f32({19})},
       {{"alpha", 0.5}, {"beta", 1.0}, {"transA", int64_t{0}}, {"transB", int64_t{1}}},
       {1}},
      500);
}

TEST(EpilogueLowering, RowProductGemm) {
  // Both loop orders of the row product: B's rows contiguous, and transposed.
  for (int64_t trans_b : {0, 1})
    expectEveryEpilogue(
        {"Gemm",
         {f32({9, 20}), trans_b ? f32({19, 20}) : f32({20, 19}), std::nullopt},
         {{"alpha", 1.0}, {"beta", 1.0}, {"transA", int64_t{0}}, {"transB", trans_b}},
         {}},
        600 + 50 * trans_b);
}

TEST(EpilogueLowering, DirectConv) {
  // Grouped (the direct loop); 7 x 9 pixels: a partial vector per plane.
  expectEveryEpilogue({"Conv",
                       {f32({2, 4, 7, 9}), f32({6, 2, 3, 3}), f32({6})},
                       convAttrs({3, 3}, {1, 1, 1, 1}, 2),
                       {1}},
                      700);
  expectEveryEpilogue({"Conv",
                       {f32({1, 3, 5, 5}), f32({4, 3, 3, 3}), std::nullopt},
                       convAttrs({3, 3}, {0, 0, 0, 0}, 1),
                       {}},
                      800);
}

TEST(EpilogueLowering, DepthwiseConv) {
  // group == C == M: the depthwise kernel's one store per vector applies it;
  // 7 x 9 and 13 x 17 pixels: partial and shifted chunks, stride 2's lane order.
  expectEveryEpilogue({"Conv",
                       {f32({2, 4, 7, 9}), f32({4, 1, 3, 3}), f32({4})},
                       convAttrs({3, 3}, {1, 1, 1, 1}, 4),
                       {1}},
                      900);
  Attrs stride2 = convAttrs({3, 3}, {1, 1, 1, 1}, 8);
  stride2["strides"] = Dims{2, 2};
  expectEveryEpilogue(
      {"Conv", {f32({1, 8, 13, 17}), f32({8, 1, 3, 3}), std::nullopt}, stride2, {1}}, 1000);
}

TEST(EpilogueLowering, ConvGemmPackingItsPanels) {
  // X in, panels packed per task in scratch; two images, 10 x 11 pixels.
  Attrs attrs = convAttrs({3, 3}, {1, 1, 1, 1}, 1);
  attrs.erase("group");
  attrs["panel"] = int64_t{96};
  attrs["output_spatial"] = Dims{10, 11};
  expectEveryEpilogue(
      {"nanoc.ConvGemm", {f32({2, 2, 10, 11}), f32({13, 2, 3, 3}), f32({13})}, attrs, {1}}, 1100);
}

TEST(EpilogueLowering, Winograd) {
  // Scattered stores and residual gathers, partial tiles at the edges. F(2x2,
  // 3x3): random U (not a transformed W) through F(4x4)'s larger
  // coefficients cancels to outputs far smaller than its terms, whose
  // rounding a bounded activation then shows against 1e-5 of its range.
  Attrs attrs = {{"tile", int64_t{2}},
                 {"out_channels", int64_t{13}},
                 {"pads", Dims{1, 1, 1, 1}},
                 {"panel", int64_t{96}},
                 {"output_spatial", Dims{10, 11}}};
  expectEveryEpilogue(
      {"nanoc.Winograd", {f32({2, 3, 10, 11}), f32({16, 1, 3, 24}), f32({13})}, attrs, {1}}, 1200);
}

// The epilogue's parameters are checked where the anchor's shape is.
TEST(EpilogueSchema, RejectsBadFusedAttributesAndResiduals) {
  auto build = [](Attrs extra, std::optional<TensorType> residual) {
    Graph graph;
    Value* a = graph.addInput("a", f32({4, 8}));
    Value* b = graph.addInput("b", f32({8, 3}));
    Node* node = graph.addNode("MatMul", "mm", {a, b}, 1);
    node->attrs = extra;
    if (residual) node->inputs = {a, b, nullptr, graph.addInput("r", *residual)};
    inferNode(*node);
  };
  EXPECT_NO_THROW(build({{"fused_activation", std::string("Relu")}}, f32({4, 3})));
  EXPECT_THROW(build({{"fused_activation", std::string("Gelu")}}, std::nullopt), CompileError);
  EXPECT_THROW(build({{"fused_activation", std::string("LeakyRelu")}}, std::nullopt), CompileError);
  EXPECT_THROW(
      build({{"fused_activation", std::string("Relu")}, {"fused_alpha", 1.0}}, std::nullopt),
      CompileError);
  EXPECT_THROW(build({{"fused_activation", std::string("HardSigmoid")},
                      {"fused_alpha", NAN},
                      {"fused_beta", 0.5}},
                     std::nullopt),
               CompileError);
  EXPECT_THROW(build({}, f32({1, 3})), CompileError);  // no broadcast
  EXPECT_THROW(build({}, f32({4, 4})), CompileError);
}

}  // namespace
}  // namespace nanoc::cpu
