// Depthwise 2-D Conv (group == C == M) against the Conv reference on random
// inputs, on every register tile this machine runs: 3x3 and 5x5 windows,
// strides 1 and 2, symmetric and asymmetric pads up to wider than the
// window, rows narrower than a vector up to many vectors, bias or none,
// weights constant or read at run time, two images, dilations, a 7x7
// window; and the shapes that take the generic loop (stride 3, a window past
// the tap limit, scalar targets).
#include <gtest/gtest.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/Support/raw_ostream.h>

#include <map>
#include <string>
#include <vector>

#include "compiler/codegen/cpu/conv_kernels.h"
#include "compiler/codegen/cpu/kernel_test_util.h"

namespace nanoc::cpu {
namespace {

using testing::tileTargets;
using Attrs = std::map<std::string, Attr>;
using Dims = std::vector<int64_t>;

TensorType f32(Dims dims) { return {DType::F32, std::move(dims)}; }

struct Window {
  Dims kernel, pads, strides, dilations = {1, 1};
};

Attrs depthwise(int64_t channels, const Window& w) {
  return {{"kernel_shape", w.kernel},
          {"pads", w.pads},
          {"strides", w.strides},
          {"dilations", w.dilations},
          {"group", channels}};
}

std::unique_ptr<testing::SingleNodeGraph> depthwiseGraph(Dims x, const Window& w, bool bias) {
  std::vector<TensorType> inputs = {f32(x), f32({x[1], 1, w.kernel[0], w.kernel[1]})};
  if (bias) inputs.push_back(f32({x[1]}));
  return testing::makeSingleNodeGraph("Conv", inputs, depthwise(x[1], w));
}

// X [N, C, H, W] through a depthwise Conv with this window, on every tile;
// with `constant_w` W is a constant of the graph (as from a model).
void expectDepthwiseMatches(Dims x, const Window& w, bool bias, bool constant_w, uint64_t seed) {
  auto g = depthwiseGraph(x, w, bias);
  std::vector<TensorType> inputs;
  for (const Value* in : g->node->inputs) inputs.push_back(in->type);
  std::string what = testing::describe("Conv", inputs) + " pads " + dimsStr(w.pads) + " strides " +
                     dimsStr(w.strides) + " dilations " + dimsStr(w.dilations);
  testing::expectMatchesOnEveryTile(*g->node, seed, what,
                                    constant_w ? std::vector<size_t>{1} : std::vector<size_t>{});
}

TEST(DepthwiseConvLowering, EveryWindowAndWidth) {
  std::vector<Window> windows = {
      {{3, 3}, {1, 1, 1, 1}, {1, 1}},  // mobilenet's stride 1
      {{3, 3}, {1, 1, 1, 1}, {2, 2}},  // and stride 2
      {{3, 3}, {0, 0, 1, 1}, {2, 2}},  // TF's SAME at stride 2: pad at the end only
      {{3, 3}, {0, 0, 0, 0}, {1, 1}}, {{5, 5}, {2, 2, 2, 2}, {1, 1}},  // efficientnet's 5x5
      {{5, 5}, {2, 2, 2, 2}, {2, 2}}, {{3, 3}, {2, 0, 1, 2}, {1, 2}},  // asymmetric, mixed strides
      {{3, 5}, {1, 2, 0, 1}, {2, 1}},
  };
  uint64_t seed = 1;
  for (int64_t width : {1, 3, 7, 8, 17, 33, 112})
    for (const Window& w : windows) {
      int64_t height = width == 112 ? 6 : 5;
      if (width + w.pads[1] + w.pads[3] < w.kernel[1]) continue;  // no output column
      // Odd seeds: a bias and a constant W.
      bool odd = seed % 2 == 1;
      expectDepthwiseMatches({1, 3, height, width}, w, odd, odd, seed++);
    }
}

// Small planes as flat runs of V outputs (stride 1, W == OW): the 7 x 7
// maps of mobilenet and efficientnet (and 14 x 14, which stays by rows on
// the widest tiles), rows of 1 to 6 columns, asymmetric pads that keep W ==
// OW, H != OH, a partial last vector.
TEST(DepthwiseConvLowering, SmallPlanesAsFlatRuns) {
  uint64_t seed = 400;
  expectDepthwiseMatches({1, 3, 7, 7}, {{3, 3}, {1, 1, 1, 1}, {1, 1}}, true, true, seed++);
  expectDepthwiseMatches({1, 3, 7, 7}, {{5, 5}, {2, 2, 2, 2}, {1, 1}}, true, false, seed++);
  expectDepthwiseMatches({2, 4, 14, 14}, {{5, 5}, {2, 2, 2, 2}, {1, 1}}, false, true, seed++);
  expectDepthwiseMatches({1, 2, 9, 3}, {{3, 3}, {1, 1, 1, 1}, {1, 1}}, true, true, seed++);
  expectDepthwiseMatches({1, 2, 5, 1}, {{3, 3}, {1, 1, 1, 1}, {1, 1}}, true, false, seed++);
  expectDepthwiseMatches({1, 2, 6, 5}, {{3, 2}, {0, 1, 2, 0}, {1, 1}}, true, true, seed++);
  expectDepthwiseMatches({1, 2, 4, 6}, {{5, 3}, {2, 0, 2, 2}, {1, 1}}, false, false, seed++);
}

TEST(DepthwiseConvLowering, BatchAndChannels) {
  expectDepthwiseMatches({2, 5, 9, 20}, {{3, 3}, {1, 1, 1, 1}, {1, 1}}, true, false, 100);
  expectDepthwiseMatches({2, 4, 11, 35}, {{5, 5}, {2, 2, 2, 2}, {2, 2}}, false, true, 101);
}

// Pads wider than the window: whole rows and columns of outputs read only
// padding and hold the bias; a window taller and wider than the input.
TEST(DepthwiseConvLowering, PadsWiderThanTheWindow) {
  expectDepthwiseMatches({1, 2, 4, 9}, {{3, 3}, {4, 5, 3, 6}, {1, 1}}, true, false, 200);
  expectDepthwiseMatches({1, 2, 5, 10}, {{3, 3}, {4, 4, 4, 4}, {2, 2}}, true, true, 201);
  expectDepthwiseMatches({1, 3, 2, 3}, {{5, 5}, {2, 2, 2, 2}, {1, 1}}, false, false, 202);
  expectDepthwiseMatches({1, 2, 3, 2}, {{7, 7}, {3, 3, 3, 3}, {1, 2}}, true, false, 203);
}

TEST(DepthwiseConvLowering, DilationAndLargeWindows) {
  expectDepthwiseMatches({1, 3, 12, 30}, {{3, 3}, {2, 2, 2, 2}, {1, 1}, {2, 2}}, true, true, 300);
  expectDepthwiseMatches({1, 2, 13, 41}, {{3, 3}, {2, 3, 2, 1}, {2, 2}, {2, 3}}, false, false, 301);
  expectDepthwiseMatches({1, 2, 16, 40}, {{7, 7}, {3, 3, 3, 3}, {1, 1}}, true, true, 302);
  // Past the tap limit and stride 3: the generic loop.
  expectDepthwiseMatches({1, 2, 12, 20}, {{8, 8}, {3, 4, 4, 3}, {1, 1}}, true, false, 303);
  expectDepthwiseMatches({1, 2, 14, 29}, {{3, 3}, {1, 1, 1, 1}, {3, 3}}, true, false, 304);
}

// Whether the depthwise kernel (rather than the generic loop) lowered the
// node for `target`: it is the only Conv code with vector multiply-adds.
bool usesVectorKernel(const Node& node, const testing::KernelAttributes& target) {
  llvm::LLVMContext ctx;
  auto module = testing::buildKernelModule(node, ctx, "kernel", target);
  std::string ir;
  llvm::raw_string_ostream os(ir);
  module->print(os, nullptr);
  return ir.find("@llvm.fmuladd.v") != std::string::npos;
}

TEST(DepthwiseConvLowering, VectorKernelWhereItApplies) {
  const std::vector<testing::KernelAttributes> targets = tileTargets();
  ASSERT_FALSE(targets.empty());
  auto g = depthwiseGraph({1, 4, 10, 20}, {{3, 3}, {1, 1, 1, 1}, {2, 2}}, true);
  EXPECT_FALSE(usesVectorKernel(*g->node, targets[0])) << "scalar targets keep the generic loop";
  for (size_t i = 1; i < targets.size(); ++i) EXPECT_TRUE(usesVectorKernel(*g->node, targets[i]));
  if (targets.size() < 2) GTEST_SKIP() << "no vector target on this machine";
  const testing::KernelAttributes& vector = targets[1];
  EXPECT_FALSE(usesVectorKernel(
      *depthwiseGraph({1, 4, 10, 20}, {{3, 3}, {1, 1, 1, 1}, {3, 3}}, true)->node, vector));
  EXPECT_FALSE(usesVectorKernel(
      *depthwiseGraph({1, 4, 10, 20}, {{8, 8}, {1, 1, 1, 1}, {1, 1}}, true)->node, vector));
  // A grouped but not depthwise Conv.
  auto grouped = testing::makeSingleNodeGraph("Conv", {f32({1, 4, 10, 20}), f32({4, 2, 3, 3})},
                                              {{"kernel_shape", Dims{3, 3}},
                                               {"pads", Dims{1, 1, 1, 1}},
                                               {"strides", Dims{1, 1}},
                                               {"dilations", Dims{1, 1}},
                                               {"group", int64_t{2}}});
  EXPECT_FALSE(usesVectorKernel(*grouped->node, vector));
}

}  // namespace
}  // namespace nanoc::cpu
