// fuseEpilogues: the fused graph computes what the unfused one does, node by
// node on the ops' host references (which apply the fused epilogue), on
// random data; and the rules that keep a node unfused.
#include "compiler/passes/fuse_epilogue.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "compiler/ir/op_registry.h"
#include "compiler/ir/text.h"
#include "compiler/passes/conv_to_gemm.h"
#include "compiler/passes/shape_inference.h"

namespace nanoc {
namespace {

// Every pattern the pass fuses, and the ones it must not.
constexpr const char* kGraph = R"(
graph @t(%x: f32[2,4,6,6], %a: f32[8,16], %r: f32[8,12]) -> (%relu, %res, %res2, %clip, %silu, %silu2, %multi, %other, %visible, %vrelu, %late, %twice, %g1, %g2, %m2, %m3, %dw) {
  %w = constant f32[4,4,3,3] dense<0.0>
  %b = constant f32[4] dense<0.0>
  %w1 = constant f32[4,4,1,1] dense<0.0>
  %wd = constant f32[4,1,3,3] dense<0.0>
  %wg = constant f32[16,12] dense<0.0>
  %lo = constant f32[] dense<-0.5>
  %hi = constant f32[] dense<0.75>
  %c0 = Conv(%x, %w, %b) {dilations = [1, 1], group = 1, kernel_shape = [3, 3], pads = [1, 1, 1, 1], strides = [1, 1]} name "conv_relu"
  %relu = Relu(%c0) name "relu"
  %c1 = Conv(%x, %w, %b) {dilations = [1, 1], group = 1, kernel_shape = [3, 3], pads = [1, 1, 1, 1], strides = [1, 1]} name "conv_res"
  %s1 = Add(%c1, %x) name "add1"
  %res = Relu(%s1) name "relu1"
  %c2 = Conv(%x, %w1) {dilations = [1, 1], group = 1, kernel_shape = [1, 1], pads = [0, 0, 0, 0], strides = [1, 1]} name "conv_res2"
  %res2 = Add(%x, %c2) name "add2"
  %c3 = Conv(%x, %w1) {dilations = [1, 1], group = 1, kernel_shape = [1, 1], pads = [0, 0, 0, 0], strides = [1, 1]} name "conv_clip"
  %clip = Clip(%c3, %lo, %hi) name "clip"
  %c4 = Conv(%x, %w1) {dilations = [1, 1], group = 1, kernel_shape = [1, 1], pads = [0, 0, 0, 0], strides = [1, 1]} name "conv_silu"
  %sg4 = Sigmoid(%c4) name "sig4"
  %silu = Mul(%c4, %sg4) name "mul4"
  %c5 = Conv(%x, %w1) {dilations = [1, 1], group = 1, kernel_shape = [1, 1], pads = [0, 0, 0, 0], strides = [1, 1]} name "conv_silu2"
  %sg5 = Sigmoid(%c5) name "sig5"
  %silu2 = Mul(%sg5, %c5) name "mul5"
  %c6 = Conv(%x, %w1) {dilations = [1, 1], group = 1, kernel_shape = [1, 1], pads = [0, 0, 0, 0], strides = [1, 1]} name "conv_multi"
  %multi = Relu(%c6) name "relu6"
  %other = Neg(%c6) name "neg6"
  %visible = Conv(%x, %w1) {dilations = [1, 1], group = 1, kernel_shape = [1, 1], pads = [0, 0, 0, 0], strides = [1, 1]} name "conv_visible"
  %vrelu = Relu(%visible) name "vrelu"
  %c8 = Conv(%x, %w1) {dilations = [1, 1], group = 1, kernel_shape = [1, 1], pads = [0, 0, 0, 0], strides = [1, 1]} name "conv_early"
  %n8 = Neg(%x) name "computed_later"
  %s8 = Add(%c8, %n8) name "add8"
  %late = Sigmoid(%s8) name "sig8"
  %c9 = Conv(%x, %w1) {dilations = [1, 1], group = 1, kernel_shape = [1, 1], pads = [0, 0, 0, 0], strides = [1, 1]} name "conv_act_first"
  %t9 = Tanh(%c9) name "tanh9"
  %twice = Add(%t9, %x) name "add9"
  %gg1 = Gemm(%a, %wg) {alpha = 1.0, beta = 1.0, transA = 0, transB = 0} name "gemm_leaky"
  %g1 = LeakyRelu(%gg1) {alpha = 0.125} name "leaky"
  %gg2 = Gemm(%a, %wg) {alpha = 1.0, beta = 1.0, transA = 0, transB = 0} name "gemm_res"
  %s2 = Add(%r, %gg2) name "gadd"
  %g2 = HardSigmoid(%s2) {alpha = 0.25, beta = 0.5} name "hsig"
  %mm2 = MatMul(%a, %wg) name "mm_res"
  %ms2 = Add(%mm2, %r) name "madd"
  %m2 = HardSwish(%ms2) name "hswish"
  %mm3 = MatMul(%a, %wg) name "mm_tanh"
  %m3 = Tanh(%mm3) name "tanh3"
  %cd = Conv(%x, %wd) {dilations = [1, 1], group = 4, kernel_shape = [3, 3], pads = [1, 1, 1, 1], strides = [1, 1]} name "depthwise"
  %sd = Add(%cd, %x) name "addd"
  %dw = Clip(%sd, %lo, %hi) name "clipd"
}
)";

// Random values in [-1, 1], the same for a given name.
std::vector<float> randomValues(const std::string& name, int64_t count) {
  std::mt19937_64 rng(std::hash<std::string>{}(name) % 1000003);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> values(static_cast<size_t>(count));
  for (float& v : values) v = dist(rng);
  return values;
}

// Random weights: every constant but the (scalar) Clip bounds.
void randomize(Graph& g) {
  for (const auto& v : g.values) {
    if (!v->isConstant() || v->type.rank() == 0) continue;
    std::vector<float> values = randomValues(v->name, v->type.numel());
    auto bytes = std::make_shared<std::vector<uint8_t>>(v->type.bytes());
    std::memcpy(bytes->data(), values.data(), bytes->size());
    v->data = bytes;
  }
}

// Runs the graph on its ops' references, the graph inputs random. Returns
// each output's values by name.
std::map<std::string, std::vector<float>> evaluate(const Graph& g) {
  std::map<const Value*, std::vector<float>> at;
  for (const Value* v : g.inputs) at[v] = randomValues(v->name, v->type.numel());
  auto data = [&](const Value* v) -> const float* {
    if (v->data) return v->as<float>();
    return at.at(v).data();
  };
  for (const auto& node : g.nodes) {
    std::vector<const void*> in;
    for (const Value* v : node->inputs) in.push_back(v ? data(v) : nullptr);
    std::vector<void*> out;
    for (const Value* v : node->outputs) {
      at[v].resize(static_cast<size_t>(v->type.numel()));
      out.push_back(at[v].data());
    }
    findOp(node->op)->reference(*node, in, out);
  }
  std::map<std::string, std::vector<float>> result;
  for (const Value* v : g.outputs)
    result[v->name] = std::vector<float>(data(v), data(v) + v->type.numel());
  return result;
}

std::unique_ptr<Graph> parsed() {
  std::unique_ptr<Graph> g = parseGraph(kGraph);
  inferShapes(*g);
  randomize(*g);
  return g;
}

TEST(FuseEpilogue, FusedGraphMatchesTheUnfusedOne) {
  for (int64_t panel : {0, 16}) {
    SCOPED_TRACE(panel ? "on nanoc.ConvGemm" : "on Conv");
    std::unique_ptr<Graph> plain = parsed(), fused = parsed();
    convToGemm(*plain, panel);
    convToGemm(*fused, panel);
    const size_t before = fused->nodes.size();
    // relu, add1 + relu1, add2, clip, sig4 + mul4, sig5 + mul5, add8 + sig8,
    // tanh9, leaky, gadd + hsig, madd + hswish, tanh3, addd + clipd.
    EXPECT_EQ(fuseEpilogues(*fused), 20);
    EXPECT_EQ(fused->nodes.size(), before - 20);
    verifyGraph(*fused);
    std::map<std::string, std::vector<float>> want = evaluate(*plain), got = evaluate(*fused);
    ASSERT_EQ(want.size(), got.size());
    for (const auto& [name, values] : want) {
      ASSERT_EQ(got.at(name).size(), values.size()) << name;
      for (size_t i = 0; i < values.size(); ++i)
        ASSERT_NEAR(got.at(name)[i], values[i], 1e-6 * std::max(1.0f, std::fabs(values[i])))
            << name << "[" << i << "]";
    }
  }
}

TEST(FuseEpilogue, KeepsSharedAndVisibleIntermediates) {
  std::unique_ptr<Graph> g = parsed();
  fuseEpilogues(*g);
  std::map<std::string, const Node*> by_name;
  for (const auto& node : g->nodes) by_name[node->name] = node.get();
  // Two uses, a graph output, an activation before the Add.
  for (const char* kept : {"relu6", "neg6", "vrelu", "add9"})
    EXPECT_TRUE(by_name.count(kept)) << kept;
  EXPECT_FALSE(by_name.at("conv_multi")->has("fused_activation"));
  EXPECT_FALSE(by_name.at("conv_visible")->has("fused_activation"));
  EXPECT_EQ(by_name.at("conv_act_first")->s("fused_activation"), "Tanh");
  // The residual computed after the Conv: the Conv moved after it.
  size_t neg = 0, conv = 0;
  for (size_t i = 0; i < g->nodes.size(); ++i) {
    if (g->nodes[i]->name == "computed_later") neg = i;
    if (g->nodes[i]->name == "conv_early") conv = i;
  }
  EXPECT_LT(neg, conv);
  EXPECT_EQ(by_name.at("conv_early")->inputs.size(), 4u);
  EXPECT_EQ(by_name.at("conv_early")->inputs[2], nullptr);
}

}  // namespace
}  // namespace nanoc
