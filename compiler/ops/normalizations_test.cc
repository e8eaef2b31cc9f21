// The normalization ops (compiler/ops/normalizations.cc) and LogSoftmax and
// Hardmax (softmax.cc) as a specification: shape rules, their errors, and the
// references on small cases computed by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>

#include "compiler/ir/error.h"
#include "compiler/ir/op_registry.h"
#include "compiler/ops/float_elements.h"
#include "compiler/passes/shape_inference.h"

namespace nanoc {
namespace {

using Dims = std::vector<int64_t>;
using Attrs = std::map<std::string, Attr>;

TensorType f32(Dims dims) { return {DType::F32, std::move(dims)}; }

struct Tensor {
  TensorType type;
  std::vector<float> data;
};

// One node over graph inputs (std::nullopt = absent optional input), typed by
// its shape rule.
struct OneNode {
  Graph graph;
  Node* node = nullptr;

  OneNode(const std::string& op, const std::vector<std::optional<TensorType>>& inputs, Attrs attrs,
          const std::string& name = "n") {
    std::vector<Value*> in;
    for (size_t i = 0; i < inputs.size(); ++i)
      in.push_back(inputs[i] ? graph.addInput("x" + std::to_string(i), *inputs[i]) : nullptr);
    node = graph.addNode(op, name, in, static_cast<size_t>(findOp(op)->num_outputs));
    node->attrs = std::move(attrs);
  }
};

std::vector<TensorType> infer(const std::string& op,
                              const std::vector<std::optional<TensorType>>& inputs, Attrs attrs) {
  OneNode one(op, inputs, std::move(attrs));
  inferNode(*one.node);
  std::vector<TensorType> types;
  for (const Value* v : one.node->outputs) types.push_back(v->type);
  return types;
}

void expectInferError(const std::string& op, const std::vector<std::optional<TensorType>>& inputs,
                      Attrs attrs, const std::string& what) {
  OneNode one(op, inputs, std::move(attrs), "bad_node");
  try {
    inferNode(*one.node);
    FAIL() << op << ": expected a CompileError containing '" << what << "'";
  } catch (const CompileError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("node 'bad_node' (" + op + ")"), std::string::npos) << msg;
    EXPECT_NE(msg.find(what), std::string::npos) << msg;
  }
}

// Every output of the op's reference on f32 inputs.
std::vector<std::vector<float>> referenceAll(const std::string& op,
                                             const std::vector<std::optional<Tensor>>& inputs,
                                             Attrs attrs) {
  std::vector<std::optional<TensorType>> types;
  for (const auto& t : inputs) types.push_back(t ? std::optional(t->type) : std::nullopt);
  OneNode one(op, types, std::move(attrs));
  inferNode(*one.node);
  std::vector<const void*> in;
  for (const auto& t : inputs) in.push_back(t ? t->data.data() : nullptr);
  std::vector<std::vector<float>> results;
  for (const Value* v : one.node->outputs) results.emplace_back(v->type.numel(), -12345.0f);
  std::vector<void*> out;
  for (auto& r : results) out.push_back(r.data());
  findOp(op)->reference(*one.node, in, out);
  return results;
}

std::vector<float> reference(const std::string& op,
                             const std::vector<std::optional<Tensor>>& inputs, Attrs attrs) {
  return referenceAll(op, inputs, std::move(attrs))[0];
}

void expectNear(const std::vector<float>& got, const std::vector<float>& want, float tol = 1e-5f) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "at " << i;
}

Attrs axisEps(int64_t axis, double eps) { return {{"axis", axis}, {"epsilon", eps}}; }

// ---- LayerNormalization, RMSNormalization ----

TEST(LayerNormalization, StatisticsHaveTheNormalizedDimsSetToOne) {
  auto types =
      infer("LayerNormalization", {f32({2, 3, 4}), f32({3, 4}), f32({3, 4})}, axisEps(1, 1e-5));
  ASSERT_EQ(types.size(), 3u);
  EXPECT_EQ(types[0], f32({2, 3, 4}));
  EXPECT_EQ(types[1], f32({2, 1, 1}));
  EXPECT_EQ(types[2], f32({2, 1, 1}));
  // B is optional; Scale may broadcast to the normalized dims.
  EXPECT_EQ(
      infer("LayerNormalization", {f32({2, 3, 4}), f32({4}), std::nullopt}, axisEps(1, 1e-5))[0],
      f32({2, 3, 4}));
}

TEST(LayerNormalization, RejectsBadAxisScaleAndEpsilon) {
  expectInferError("LayerNormalization", {f32({2, 3}), f32({3})}, axisEps(2, 1e-5), "'axis' is 2");
  expectInferError("LayerNormalization", {f32({2, 3}), f32({2})}, axisEps(1, 1e-5),
                   "Scale f32[2] does not broadcast to the normalized dims [3]");
  expectInferError("LayerNormalization", {f32({2, 3}), f32({3}), f32({2, 3})}, axisEps(1, 1e-5),
                   "B f32[2,3] does not broadcast");
  expectInferError("LayerNormalization", {f32({2, 3}), f32({3})}, axisEps(1, -1.0), "'epsilon'");
}

TEST(LayerNormalization, NormalizesEachRowThenScalesAndShifts) {
  // Row [1, 3]: mean 2, variance 1; row [2, 2]: mean 2, variance 0.
  Tensor x{f32({2, 2}), {1, 3, 2, 2}};
  Tensor scale{f32({2}), {2, 3}}, bias{f32({2}), {1, -1}};
  std::vector<std::vector<float>> out =
      referenceAll("LayerNormalization", {x, scale, bias}, axisEps(1, 3.0));
  // inv_std = 1 / sqrt(1 + 3) = 0.5 and 1 / sqrt(3).
  expectNear(out[0], {0, 0.5f, 1, -1});
  expectNear(out[1], {2, 2});
  expectNear(out[2], {0.5f, 1 / std::sqrt(3.0f)});
}

TEST(LayerNormalization, BroadcastScale) {
  Tensor x{f32({1, 2, 2}), {0, 2, 4, 8}};  // axis 1: one row, mean 3.5, variance 8.75
  Tensor scale{f32({2, 1}), {1, 2}};
  float inv = 1 / std::sqrt(8.75f);
  expectNear(reference("LayerNormalization", {x, scale, std::nullopt}, axisEps(1, 0.0)),
             {-3.5f * inv, -1.5f * inv, 0.5f * 2 * inv, 4.5f * 2 * inv});
}

TEST(RMSNormalization, DividesByTheRootMeanSquare) {
  EXPECT_EQ(infer("RMSNormalization", {f32({2, 3}), f32({3})}, axisEps(1, 1e-5))[0], f32({2, 3}));
  expectInferError("RMSNormalization", {f32({2, 3}), f32({4})}, axisEps(1, 1e-5),
                   "does not broadcast");
  // Row [3, 4]: mean square 12.5, eps 3.5 -> rms 4.
  Tensor x{f32({1, 2}), {3, 4}};
  Tensor scale{f32({2}), {1, 2}};
  expectNear(reference("RMSNormalization", {x, scale}, axisEps(1, 3.5)), {0.75f, 2});
}

// ---- InstanceNormalization, GroupNormalization ----

TEST(InstanceNormalization, NormalizesEachChannelOfEachImage) {
  TensorType c = f32({2});
  EXPECT_EQ(infer("InstanceNormalization", {f32({1, 2, 3}), c, c}, {{"epsilon", 1e-5}})[0],
            f32({1, 2, 3}));
  expectInferError("InstanceNormalization", {f32({1, 2, 3}), f32({3}), c}, {{"epsilon", 1e-5}},
                   "scale must be [2]");
  expectInferError("InstanceNormalization", {f32({2}), c, c}, {{"epsilon", 1e-5}}, "rank >= 2");
  // Channel 0 [1, 3] and channel 1 [0, 4]: variances 1 and 4.
  Tensor x{f32({1, 2, 2}), {1, 3, 0, 4}};
  Tensor scale{c, {1, 2}}, bias{c, {0, 10}};
  expectNear(reference("InstanceNormalization", {x, scale, bias}, {{"epsilon", 0.0}}),
             {-1, 1, 8, 12});
}

TEST(GroupNormalization, ScaleAndBiasPerChannelOrPerGroup) {
  Attrs attrs = {{"num_groups", int64_t{2}}, {"epsilon", 0.0}};
  EXPECT_EQ(infer("GroupNormalization", {f32({1, 4, 1}), f32({4}), f32({4})}, attrs)[0],
            f32({1, 4, 1}));
  EXPECT_EQ(infer("GroupNormalization", {f32({1, 4, 1}), f32({2}), f32({2})}, attrs)[0],
            f32({1, 4, 1}));
  expectInferError("GroupNormalization", {f32({1, 4, 1}), f32({3}), f32({3})}, attrs,
                   "scale must be [C] = [4] or [num_groups] = [2]");
  expectInferError("GroupNormalization", {f32({1, 4, 1}), f32({4}), f32({2})}, attrs,
                   "B must be [4]");
  expectInferError("GroupNormalization", {f32({1, 4, 1}), f32({4}), f32({4})},
                   {{"num_groups", int64_t{3}}, {"epsilon", 0.0}}, "'num_groups' is 3");
  // Groups {1, 3} and {0, 4}: mean 2 var 1, mean 2 var 4.
  Tensor x{f32({1, 4}), {1, 3, 0, 4}};
  expectNear(reference("GroupNormalization",
                       {x, Tensor{f32({4}), {1, 2, 3, 4}}, Tensor{f32({4}), {0, 0, 0, 1}}}, attrs),
             {-1, 2, -3, 5});
  expectNear(reference("GroupNormalization",
                       {x, Tensor{f32({2}), {1, 2}}, Tensor{f32({2}), {0, 1}}}, attrs),
             {-1, 1, -1, 3});
}

// ---- MeanVarianceNormalization, LpNormalization, LRN ----

TEST(MeanVarianceNormalization, DividesByTheStandardDeviationPlusEpsilon) {
  EXPECT_EQ(infer("MeanVarianceNormalization", {f32({2, 3})}, {{"axis", int64_t{0}}})[0],
            f32({2, 3}));
  expectInferError("MeanVarianceNormalization", {f32({2, 3})}, {{"axis", int64_t{2}}},
                   "'axis' is 2");
  Tensor x{f32({2, 2}), {1, 3, 5, 5}};
  expectNear(reference("MeanVarianceNormalization", {x}, {{"axis", int64_t{1}}}), {-1, 1, 0, 0});
}

TEST(LpNormalization, L1AndL2NormsAlongOneAxisWithZeroVectorsKept) {
  expectInferError("LpNormalization", {f32({2})}, {{"axis", int64_t{0}}, {"p", int64_t{3}}},
                   "'p' must be 1 or 2");
  Tensor x{f32({2, 2}), {3, -4, 0, 0}};
  expectNear(reference("LpNormalization", {x}, {{"axis", int64_t{1}}, {"p", int64_t{2}}}),
             {0.6f, -0.8f, 0, 0});
  expectNear(reference("LpNormalization", {x}, {{"axis", int64_t{1}}, {"p", int64_t{1}}}),
             {3 / 7.0f, -4 / 7.0f, 0, 0});
  expectNear(reference("LpNormalization", {x}, {{"axis", int64_t{0}}, {"p", int64_t{1}}}),
             {1, -1, 0, 0});
}

TEST(LRN, SumsSquaresOverTheClippedChannelWindow) {
  Attrs attrs = {{"size", int64_t{2}}, {"alpha", 2.0}, {"beta", 1.0}, {"bias", 1.0}};
  expectInferError("LRN", {f32({1, 2, 2})},
                   {{"size", int64_t{0}}, {"alpha", 2.0}, {"beta", 1.0}, {"bias", 1.0}},
                   "'size' must be in");
  // size 2: channel c sums channels c and c + 1; alpha / size = 1.
  Tensor x{f32({1, 3, 1}), {1, 2, 3}};
  expectNear(reference("LRN", {x}, attrs), {1 / 6.0f, 2 / 14.0f, 3 / 10.0f});
}

// ---- LogSoftmax, Hardmax ----

TEST(LogSoftmax, IsTheLogOfSoftmaxWithoutOverflow) {
  expectInferError("LogSoftmax", {f32({2, 3})}, {{"axis", int64_t{2}}}, "'axis' is 2");
  Tensor x{f32({2, 2}), {0, 0, 1000, 1000}};
  float l2 = std::log(2.0f);
  expectNear(reference("LogSoftmax", {x}, {{"axis", int64_t{1}}}), {-l2, -l2, -l2, -l2});
  expectNear(reference("LogSoftmax", {x}, {{"axis", int64_t{0}}}), {-1000, -1000, 0, 0});
}

TEST(Hardmax, MarksTheFirstLargestElement) {
  Tensor x{f32({2, 3}), {1, 3, 3, 5, 0, -1}};
  expectNear(reference("Hardmax", {x}, {{"axis", int64_t{1}}}), {0, 1, 0, 1, 0, 0});
  expectNear(reference("Hardmax", {x}, {{"axis", int64_t{0}}}), {0, 1, 1, 1, 0, 0});
}

// ---- Attention, AttentionScores ----

Attrs attentionAttrs(double scale, int64_t causal = 0) {
  return {{"scale", scale},
          {"softcap", 0.0},
          {"is_causal", causal},
          {"past_len", int64_t{0}},
          {"left_window", int64_t{-1}},
          {"right_window", int64_t{-1}}};
}

TEST(Attention, ShapeRules) {
  Attrs a = attentionAttrs(1.0);
  EXPECT_EQ(infer("Attention", {f32({2, 6, 4, 8}), f32({2, 3, 5, 8}), f32({2, 3, 5, 10})}, a)[0],
            f32({2, 6, 4, 10}));
  Attrs scores = a;
  scores["mode"] = int64_t{2};
  EXPECT_EQ(infer("AttentionScores", {f32({2, 6, 4, 8}), f32({2, 3, 5, 8}), f32({2, 3, 5, 10})},
                  scores)[0],
            f32({2, 6, 4, 5}));
  expectInferError("Attention", {f32({2, 4, 4, 8}), f32({2, 3, 5, 8}), f32({2, 3, 5, 8})}, a,
                   "must be a multiple of the key heads");
  expectInferError("Attention", {f32({2, 3, 4, 8}), f32({2, 3, 5, 7}), f32({2, 3, 5, 8})}, a,
                   "do not agree");
  expectInferError("Attention",
                   {f32({2, 3, 4, 8}), f32({2, 3, 5, 8}), f32({2, 3, 5, 8}), f32({4, 6})}, a,
                   "attn_mask f32[4,6] does not broadcast to [2,3,4,5]");
  expectInferError(
      "Attention",
      {f32({2, 3, 4, 8}), f32({2, 3, 5, 8}), f32({2, 3, 5, 8}), std::nullopt, f32({2})}, a,
      "nonpad_kv_seqlen must be i64[2]");
}

TEST(Attention, WeighsValuesBySoftmaxOfScaledScores) {
  // One query [1, 0] against keys [1, 0] and [0, 1]: scores scale and 0.
  Tensor q{f32({1, 1, 1, 2}), {1, 0}}, k{f32({1, 1, 2, 2}), {1, 0, 0, 1}};
  Tensor v{f32({1, 1, 2, 1}), {10, 20}};
  float p = 1 / (1 + std::exp(-std::log(3.0f)));  // e^s / (e^s + 1) with e^s = 3
  expectNear(reference("Attention", {q, k, v}, attentionAttrs(std::log(3.0))),
             {10 * p + 20 * (1 - p)});
  // A causal mask leaves the first query only the first key.
  Tensor q2{f32({1, 1, 2, 2}), {1, 0, 0, 1}};
  expectNear(reference("Attention", {q2, k, v}, attentionAttrs(1.0, 1)),
             {10, 10 / (1 + std::exp(1.0f)) + 20 / (1 + std::exp(-1.0f))});
}

TEST(FloatElements, HalfAndBfloat16RoundToNearestEven) {
  EXPECT_EQ(floatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(floatToHalf(-2.0f), 0xc000);
  EXPECT_EQ(floatToHalf(0.1f), 0x2e66);
  EXPECT_EQ(floatToHalf(65504.0f), 0x7bff);
  EXPECT_EQ(floatToHalf(65520.0f), 0x7c00);            // rounds up to inf
  EXPECT_EQ(floatToHalf(1.0f + 1.0f / 2048), 0x3c00);  // a tie: to even
  EXPECT_EQ(floatToHalf(5.96046448e-08f), 0x0001);     // the smallest subnormal
  EXPECT_EQ(halfToFloat(0x0001), 5.96046448e-08f);
  EXPECT_EQ(halfToFloat(0x3555), 0.333251953125f);
  EXPECT_TRUE(std::isnan(halfToFloat(floatToHalf(NAN))));
  EXPECT_EQ(floatToBf16(1.0f), 0x3f80);
  EXPECT_EQ(floatToBf16(1.0f + 1.0f / 256), 0x3f80);  // a tie: to even
  EXPECT_EQ(bf16ToFloat(floatToBf16(3.0f)), 3.0f);
  for (uint32_t h = 0; h < 0x7c00; ++h)  // every finite half round-trips
    ASSERT_EQ(floatToHalf(halfToFloat(static_cast<uint16_t>(h))), h) << h;
}

}  // namespace
}  // namespace nanoc
