// The GPU MatMuls' operand views (gpu_operand_views.h) on an attention
// block: what folds, what stays, the views' attributes, that the graph
// computes bitwise what it computed (every node run by its op's reference,
// the MatMul's through its views), and the shape rule's checks of a view.
#include "compiler/passes/gpu_operand_views.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "compiler/ir/error.h"
#include "compiler/ir/op_registry.h"
#include "compiler/ir/text.h"
#include "compiler/ops/operand_view.h"
#include "compiler/passes/gpu_placement.h"
#include "compiler/passes/pass_test_util.h"
#include "compiler/passes/pipeline.h"
#include "compiler/passes/shape_inference.h"

namespace nanoc {
namespace {

using Ints = std::vector<int64_t>;

// bert_tiny's attention at 2 heads of 4 over 6 tokens: one QKV projection
// sliced three ways, each reshaped to heads and transposed (K to [dim,
// tokens]); the output transposed back; and a Transpose that %kt2 reads
// too, which must stay.
constexpr const char* kAttention = R"(
graph @t(%x: f32[1,6,8]) -> (%y, %kt2) {
  %w = constant f32[8,24] dense<0.125>
  %wo = constant f32[8,8] dense<0.25>
  %qkv = MatMul(%x, %w) name "qkv"
  %q = Slice(%qkv) {ends = [1, 6, 8], starts = [0, 0, 0], steps = [1, 1, 1]} name "q"
  %k = Slice(%qkv) {ends = [1, 6, 16], starts = [0, 0, 8], steps = [1, 1, 1]} name "k"
  %v = Slice(%qkv) {ends = [1, 6, 24], starts = [0, 0, 16], steps = [1, 1, 1]} name "v"
  %qr = Reshape(%q) {shape = [1, 6, 2, 4]} name "qr"
  %kr = Reshape(%k) {shape = [1, 6, 2, 4]} name "kr"
  %vr = Reshape(%v) {shape = [1, 6, 2, 4]} name "vr"
  %qt = Transpose(%qr) {perm = [0, 2, 1, 3]} name "qt"
  %kt = Transpose(%kr) {perm = [0, 2, 3, 1]} name "kt"
  %vt = Transpose(%vr) {perm = [0, 2, 1, 3]} name "vt"
  %s = MatMul(%qt, %kt) name "scores"
  %p = Softmax(%s) {axis = 3} name "softmax"
  %o = MatMul(%p, %vt) name "pv"
  %ot = Transpose(%o) {perm = [0, 2, 1, 3]} name "ot"
  %or = Reshape(%ot) {shape = [1, 6, 8]} name "or"
  %y = MatMul(%or, %wo) name "out"
  %kt2 = Relu(%kt) name "kt2"
}
)";

std::unique_ptr<Graph> attention() {
  std::unique_ptr<Graph> g = parseGraph(kAttention);
  for (auto& v : g->values)
    if (v->isConstant())
      testing::setF32Constant(*v,
                              [](size_t i) { return static_cast<float>(i % 17) / 16.0f - 0.5f; });
  inferShapes(*g);
  return g;
}

using testing::countOps;
using testing::evaluateByReferences;
using testing::nodeNamed;

TEST(GpuOperandViews, ReshapedViewStridesSplitAndMergeNestedDims) {
  // [6, 8] of row stride 24 (a slice of [6, 24]): 8 -> 2 x 4 splits.
  EXPECT_EQ(reshapedViewStrides({6, 8}, {24, 1}, {6, 2, 4}), (Ints{24, 4, 1}));
  // Dense [2, 3, 4] -> [6, 4] merges; size-1 dims take any stride.
  EXPECT_EQ(reshapedViewStrides({2, 3, 4}, {12, 4, 1}, {6, 4}), (Ints{4, 1}));
  EXPECT_EQ(reshapedViewStrides({6, 8}, {24, 1}, {1, 6, 1, 8}), (Ints{144, 24, 8, 1}));
  // A transposed [6, 2, 4] (strides 4, 24, 1) cannot merge 6 x 2: empty.
  EXPECT_TRUE(reshapedViewStrides({6, 2, 4}, {4, 24, 1}, {12, 4}).empty());
  // Another element count: empty.
  EXPECT_TRUE(reshapedViewStrides({6, 8}, {8, 1}, {50}).empty());
}

TEST(GpuOperandViews, FoldsTheHeadsIntoTheAttentionsProductsBitwise) {
  std::unique_ptr<Graph> g = attention();
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> x(48);
  for (float& e : x) e = dist(rng);
  const std::vector<std::vector<float>> before = evaluateByReferences(*g, x);
  GpuPassOptions options;
  options.offload = GpuOffload::All;
  options.split_k = nullptr;
  runGpuPasses(
      *g, [](const Node&) { return true; }, options);
  // The three Slices, Q's and V's Transposes go; K's Transpose stays for
  // %kt2 (and so does its Reshape and Slice); so does the output's, whose
  // Reshape merges a transposed pair of dims.
  EXPECT_EQ(countOps(*g, "Slice"), 1u);
  EXPECT_EQ(countOps(*g, "Transpose"), 2u);
  const Node* scores = nodeNamed(*g, "scores");
  ASSERT_NE(scores, nullptr);
  EXPECT_EQ(scores->inputs[0]->name, "qkv");
  EXPECT_EQ(scores->ints("a_view_shape"), (Ints{1, 2, 6, 4}));
  EXPECT_EQ(scores->ints("a_view_strides"), (Ints{144, 4, 24, 1}));
  EXPECT_EQ(scores->i("a_view_offset"), 0);
  EXPECT_FALSE(scores->has("b_view_shape"));
  const Node* pv = nodeNamed(*g, "pv");
  ASSERT_NE(pv, nullptr);
  EXPECT_EQ(pv->inputs[1]->name, "qkv");
  EXPECT_EQ(pv->ints("b_view_strides"), (Ints{144, 4, 24, 1}));
  EXPECT_EQ(pv->i("b_view_offset"), 16);
  EXPECT_FALSE(nodeNamed(*g, "out")->has("a_view_shape"));
  const std::vector<std::vector<float>> after = evaluateByReferences(*g, x);
  ASSERT_EQ(before.size(), after.size());
  for (size_t o = 0; o < before.size(); ++o) {
    ASSERT_EQ(before[o].size(), after[o].size());
    EXPECT_EQ(std::memcmp(before[o].data(), after[o].data(), before[o].size() * 4), 0) << o;
  }
}

TEST(GpuOperandViews, LeavesCpuProductsAndOnlyReshapes) {
  std::unique_ptr<Graph> g = attention();
  // Nothing on the GPU: nothing folds.
  EXPECT_EQ(foldGpuOperandViews(*g), 0u);
  // A chain of Reshapes alone holds no kernel.
  std::unique_ptr<Graph> r = parseGraph(R"(
graph @t(%x: f32[2,24], %w: f32[4,5]) -> (%y) {
  %xr = Reshape(%x) {shape = [2, 6, 4]} name "xr"
  %y = MatMul(%xr, %w) name "mm"
}
)");
  inferShapes(*r);
  for (auto& node : r->nodes) node->attrs[kDeviceAttribute] = std::string(kGpuDevice);
  EXPECT_EQ(foldGpuOperandViews(*r), 0u);
}

TEST(GpuOperandViews, ShapeRuleRefusesViewsOutsideTheirInput) {
  auto mm = [](Ints shape, Ints strides, int64_t offset) {
    std::unique_ptr<Graph> g = parseGraph(R"(
graph @t(%a: f32[40], %b: f32[4,3]) -> (%y) {
  %y = MatMul(%a, %b) name "mm"
}
)");
    Node& n = *g->nodes[0];
    setOperandView(n, 0, OperandView{shape, strides, offset});
    inferShapes(*g);
    return g;
  };
  // [5, 4] of row stride 8 from element 3: last 3 + 4 * 8 + 3 = 38 < 40.
  std::unique_ptr<Graph> ok = mm({5, 4}, {8, 1}, 3);
  EXPECT_EQ(ok->outputs[0]->type.dims, (Ints{5, 3}));
  EXPECT_THROW(mm({5, 4}, {8, 1}, 6), CompileError);                 // 41: past the end
  EXPECT_THROW(mm({5, 4}, {int64_t{1} << 62, 1}, 0), CompileError);  // no overflow
  EXPECT_THROW(mm({5, 4}, {8, -1}, 4), CompileError);                // negative stride
  EXPECT_THROW(mm({5, 4}, {8}, 0), CompileError);                    // one stride short
  EXPECT_THROW(mm({5, 3}, {8, 1}, 0), CompileError);                 // K differs from B's
}

}  // namespace
}  // namespace nanoc
