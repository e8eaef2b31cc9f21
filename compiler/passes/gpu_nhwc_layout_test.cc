// The GPU's channels-last layout pass (gpu_nhwc_layout.h) on a small CNN:
// what it converts, the weights it reorders, and that the graph computes
// what it computed (every node run by its op's reference, before and after).
#include "compiler/passes/gpu_nhwc_layout.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "compiler/ir/op_registry.h"
#include "compiler/ir/text.h"
#include "compiler/ops/channels_last.h"
#include "compiler/passes/pass_test_util.h"
#include "compiler/passes/pipeline.h"
#include "compiler/passes/shape_inference.h"

namespace nanoc {
namespace {

// The stem's weights are distinct (w0[i] = i / 256), so a misplaced one shows.
constexpr const char* kCnn = R"(
graph @t(%x: f32[2,3,12,10]) -> (%y, %z) {
  %w0 = constant f32[8,3,3,3] dense<0.125>
  %b0 = constant f32[8] dense<0.5>
  %w1 = constant f32[8,8,1,1] dense<0.0625>
  %k = constant f32[8,1,1] dense<2.0>
  %wd = constant f32[8,1,3,3] dense<0.25>
  %c0 = Conv(%x, %w0, %b0) {dilations = [1, 1], group = 1, kernel_shape = [3, 3], pads = [1, 1, 1, 1], strides = [1, 1]} name "stem"
  %r0 = Relu(%c0) name "relu"
  %m0 = MaxPool(%r0) {ceil_mode = 0, dilations = [1, 1], kernel_shape = [2, 2], pads = [0, 0, 0, 0], strides = [2, 2]} name "pool"
  %c1 = Conv(%m0, %w1) {dilations = [1, 1], group = 1, kernel_shape = [1, 1], pads = [0, 0, 0, 0], strides = [1, 1]} name "pointwise"
  %s1 = Mul(%c1, %k) name "scale"
  %a1 = Add(%s1, %m0) name "residual"
  %d = Conv(%a1, %wd) {dilations = [1, 1], group = 8, kernel_shape = [3, 3], pads = [1, 1, 1, 1], strides = [2, 1]} name "dw"
  %cat = Concat(%d, %d) {axis = 1} name "cat"
  %y = GlobalAveragePool(%cat) name "gap"
  %z = Relu(%a1) name "z"
}
)";

std::unique_ptr<Graph> cnn() {
  std::unique_ptr<Graph> g = parseGraph(kCnn);
  for (auto& v : g->values)
    if (v->name == "w0")
      testing::setF32Constant(*v, [](size_t i) { return static_cast<float>(i) / 256.0f; });
  inferShapes(*g);
  return g;
}

using testing::countOps;
using testing::evaluateByReferences;
using testing::nodeNamed;

TEST(GpuNhwcLayout, ConvertsTheCnnWithOneTransposeInAndOneOut) {
  std::unique_ptr<Graph> g = cnn();
  runGpuPasses(*g, [](const Node&) { return true; }, {GpuOffload::All});
  EXPECT_EQ(countOps(*g, "nanoc.ConvNHWC"), 3u);
  EXPECT_EQ(countOps(*g, "Conv"), 0u);
  EXPECT_EQ(countOps(*g, "nanoc.MaxPoolNHWC"), 1u);
  EXPECT_EQ(countOps(*g, "nanoc.GlobalAveragePoolNHWC"), 1u);
  // In: x; out: %z (a Relu read by the graph's output). The pool's
  // [2, 1, 1, 16] goes back as a Reshape.
  EXPECT_EQ(countOps(*g, "Transpose"), 2u);
  EXPECT_EQ(countOps(*g, "Reshape"), 1u);
  const Node* cat = nodeNamed(*g, "cat");
  ASSERT_NE(cat, nullptr);
  EXPECT_EQ(cat->i("axis"), 3);
  // The scale and the residual Add are one chain after the layout
  // (runGpuPasses fuses chains last); its per-channel constant is [8] now.
  const Node* residual = nodeNamed(*g, "residual");
  ASSERT_NE(residual, nullptr);
  EXPECT_EQ(residual->op, "nanoc.Elementwise");
  EXPECT_EQ(residual->s("ops"), "Mul,Add");
  ASSERT_EQ(residual->inputs.size(), 3u);
  EXPECT_TRUE(residual->inputs[1]->isConstant());
  EXPECT_EQ(residual->inputs[1]->type.dims, std::vector<int64_t>{8});
  for (const auto& node : g->nodes)
    if (node->op != "nanoc.ToHost") EXPECT_TRUE(isGpuNode(*node)) << node->name;
}

TEST(GpuNhwcLayout, ReordersConvWeightsToKernelChannelsOut) {
  std::unique_ptr<Graph> g = cnn();
  runGpuPasses(*g, [](const Node&) { return true; }, {GpuOffload::All});
  const Node* stem = nodeNamed(*g, "stem");
  ASSERT_NE(stem, nullptr);
  ASSERT_EQ(stem->op, "nanoc.ConvNHWC");
  const Value* w = stem->inputs[1];
  ASSERT_TRUE(w->isConstant());
  EXPECT_EQ(w->type.dims, (std::vector<int64_t>{3, 3, 3, 8}));
  // W'[kh][kw][c][m] = W[m][c][kh][kw] = (((m * 3 + c) * 3 + kh) * 3 + kw) / 256.
  const float* v = w->as<float>();
  for (int64_t kh = 0; kh < 3; ++kh)
    for (int64_t kw = 0; kw < 3; ++kw)
      for (int64_t c = 0; c < 3; ++c)
        for (int64_t m = 0; m < 8; ++m)
          EXPECT_EQ(v[((kh * 3 + kw) * 3 + c) * 8 + m],
                    static_cast<float>(((m * 3 + c) * 3 + kh) * 3 + kw) / 256.0f);
}

TEST(GpuNhwcLayout, ComputesWhatTheNchwGraphComputes) {
  std::unique_ptr<Graph> before = cnn(), after = cnn();
  runGpuPasses(*after, [](const Node&) { return true; }, {GpuOffload::All});
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> x(2 * 3 * 12 * 10);
  for (float& e : x) e = dist(rng);
  std::vector<std::vector<float>> want = evaluateByReferences(*before, x),
                                  got = evaluateByReferences(*after, x);
  ASSERT_EQ(got.size(), want.size());
  for (size_t o = 0; o < want.size(); ++o) {
    ASSERT_EQ(got[o].size(), want[o].size());
    for (size_t i = 0; i < want[o].size(); ++i)
      EXPECT_NEAR(got[o][i], want[o][i], 1e-5f * (1.0f + std::abs(want[o][i])))
          << "output " << o << " element " << i;
  }
}

// A U-Net's decoder: a stride-2 ConvTranspose and a linear 2x Resize of
// channels-last maps stay channels-last (their NHWC forms), so each Concat
// with its skip connection and the Conv after it need no Transpose; the
// results are the NCHW graph's.
constexpr const char* kDecoder = R"(
graph @t(%x: f32[1,3,8,8]) -> (%y) {
  %w0 = constant f32[8,3,3,3] dense<0.125>
  %wu = constant f32[8,4,2,2] dense<0.25>
  %bu = constant f32[4] dense<0.5>
  %w1 = constant f32[4,12,3,3] dense<0.0625>
  %e = Conv(%x, %w0) {dilations = [1, 1], group = 1, kernel_shape = [3, 3], pads = [1, 1, 1, 1], strides = [2, 2]} name "enc"
  %u = ConvTranspose(%e, %wu, %bu) {dilations = [1, 1], group = 1, kernel_shape = [2, 2], output_padding = [0, 0], pads = [0, 0, 0, 0], strides = [2, 2]} name "up"
  %r = Resize(%e) {antialias = 0, coordinate_transformation_mode = "half_pixel", cubic_coeff_a = -0.75, exclude_outside = 0, extrapolation_value = 0.0, mode = "linear", nearest_mode = "floor", roi = [0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0], scales = [1.0, 1.0, 2.0, 2.0], sizes = [1, 8, 8, 8]} name "resize"
  %cat = Concat(%u, %r) {axis = 1} name "cat"
  %y = Conv(%cat, %w1) {dilations = [1, 1], group = 1, kernel_shape = [3, 3], pads = [1, 1, 1, 1], strides = [1, 1]} name "dec"
}
)";

TEST(GpuNhwcLayout, KeepsAUNetDecoderChannelsLast) {
  std::unique_ptr<Graph> before = parseGraph(kDecoder), after = parseGraph(kDecoder);
  inferShapes(*before);
  inferShapes(*after);
  runGpuPasses(*after, [](const Node&) { return true; }, {GpuOffload::All});
  EXPECT_EQ(countOps(*after, "nanoc.ConvTransposeNHWC"), 1u);
  EXPECT_EQ(countOps(*after, "nanoc.ResizeNHWC"), 1u);
  EXPECT_EQ(countOps(*after, "Transpose"), 2u);  // x in, y out
  const Node* up = nodeNamed(*after, "up");
  ASSERT_NE(up, nullptr);
  EXPECT_EQ(up->inputs[1]->type.dims, (std::vector<int64_t>{8, 4, 2, 2}));  // W as it was
  EXPECT_EQ(nodeNamed(*after, "cat")->i("axis"), 3);
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> x(3 * 8 * 8);
  for (float& e : x) e = dist(rng);
  std::vector<std::vector<float>> want = evaluateByReferences(*before, x),
                                  got = evaluateByReferences(*after, x);
  ASSERT_EQ(got.size(), 1u);
  ASSERT_EQ(got[0].size(), want[0].size());
  for (size_t i = 0; i < want[0].size(); ++i)
    EXPECT_NEAR(got[0][i], want[0][i], 1e-5f * (1.0f + std::abs(want[0][i]))) << i;
}

TEST(GpuNhwcLayout, LeavesALoneConvInNchw) {
  // Two Transposes around one Conv would cost more than they save.
  std::unique_ptr<Graph> g = parseGraph(R"(
graph @t(%x: f32[1,4,8,8]) -> (%y) {
  %w = constant f32[4,4,3,3] dense<0.5>
  %y = Conv(%x, %w) {dilations = [1, 1], group = 1, kernel_shape = [3, 3], pads = [1, 1, 1, 1], strides = [1, 1]} name "conv"
}
)");
  inferShapes(*g);
  runGpuPasses(*g, [](const Node&) { return true; }, {GpuOffload::All});
  EXPECT_EQ(countOps(*g, "Conv"), 1u);
  EXPECT_EQ(countOps(*g, "Transpose"), 0u);
}

TEST(GpuNhwcLayout, LeavesHostNodesAlone) {
  std::unique_ptr<Graph> g = cnn();
  EXPECT_EQ(runGpuPasses(*g, [](const Node&) { return false; }, {GpuOffload::All}), 0u);
  EXPECT_EQ(countOps(*g, "Conv"), 3u);
  EXPECT_EQ(countOps(*g, "nanoc.ConvNHWC"), 0u);
}

}  // namespace
}  // namespace nanoc
