// Split-K on the GPU (passes/gpu_split_k.h with chooseSplitK): which
// convolutions are split and into what, the rewrite's shape (the epilogue
// moves to nanoc.SplitKSum), and the same result before and after, every
// node run by its op's reference. The kernels themselves (the partial
// ConvNHWC and the sum) are kernel cases of gpu_test_cases.h: ptxas on every
// SM, and the SIMT emulator against these references.
#include "compiler/passes/gpu_split_k.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "compiler/codegen/cpu/kernel_test_util.h"
#include "compiler/codegen/gpu/gpu_lowering.h"
#include "compiler/ir/op_registry.h"
#include "compiler/ops/channels_last.h"
#include "compiler/passes/gpu_placement.h"

namespace nanoc::gpu {
namespace {

using cpu::testing::makeSingleNodeGraphWithAbsent;
using cpu::testing::SingleNodeGraph;
using Ints = std::vector<int64_t>;

TensorType f32(Ints dims) { return TensorType{DType::F32, std::move(dims)}; }

// A 3 x 3 ConvNHWC (pads 1, stride `stride`) of X [n, side, side, c] to m
// channels on the GPU, with a bias, and with a residual and Relu if asked.
std::unique_ptr<SingleNodeGraph> conv(int64_t n, int64_t side, int64_t c, int64_t m, bool epilogue,
                                      int64_t kernel = 3, int64_t stride = 1, int64_t group = 1) {
  const int64_t pad = kernel / 2, out = (side + 2 * pad - kernel) / stride + 1;
  std::map<std::string, Attr> attrs{{"group", group},
                                    {"kernel_shape", Ints{kernel, kernel}},
                                    {"pads", Ints{pad, pad, pad, pad}},
                                    {"strides", Ints{stride, stride}},
                                    {"dilations", Ints{1, 1}},
                                    {kDeviceAttribute, std::string(kGpuDevice)}};
  std::vector<std::optional<TensorType>> in = {f32({n, side, side, c}),
                                               f32({kernel, kernel, c / group, m}), f32({m})};
  if (epilogue) {
    in.push_back(f32({n, out, out, m}));
    attrs["fused_activation"] = std::string("Relu");
  }
  return makeSingleNodeGraphWithAbsent("nanoc.ConvNHWC", in, attrs);
}

TEST(GpuSplitK, ChoosesSlicesForABatchOneCnnsDeepLayers) {
  // resnet18's 3 x 3 layers at batch 1: 49, 26, 16 and 8 tiles of 64 x 64.
  EXPECT_EQ(chooseSplitK(*conv(1, 56, 64, 64, true)->node), 144);    // 4 slices
  EXPECT_EQ(chooseSplitK(*conv(1, 28, 128, 128, true)->node), 128);  // 9
  EXPECT_EQ(chooseSplitK(*conv(1, 14, 256, 256, true)->node), 144);  // 16
  EXPECT_EQ(chooseSplitK(*conv(1, 7, 512, 512, true)->node), 144);   // 32
  // Enough tiles already (batch 8: 392), K too short to split (the 7 x 7
  // stem of 3 channels: 10 steps of 16; a 1 x 1 of 64: 4), and the
  // depthwise kernel, which is no GEMM.
  EXPECT_EQ(chooseSplitK(*conv(8, 56, 64, 64, true)->node), 0);
  EXPECT_EQ(chooseSplitK(*conv(1, 224, 3, 64, false, 7, 2)->node), 0);
  EXPECT_EQ(chooseSplitK(*conv(1, 7, 64, 512, false, 1)->node), 0);
  EXPECT_EQ(chooseSplitK(*conv(1, 14, 256, 256, false, 3, 1, 256)->node), 0);
}

std::unique_ptr<SingleNodeGraph> gpuNode(const std::string& op,
                                         const std::vector<std::optional<TensorType>>& inputs,
                                         std::map<std::string, Attr> attrs = {}) {
  attrs[kDeviceAttribute] = std::string(kGpuDevice);
  return makeSingleNodeGraphWithAbsent(op, inputs, attrs);
}

std::map<std::string, Attr> gemmAttrs(double alpha = 1.0, double beta = 1.0) {
  return {{"alpha", alpha}, {"beta", beta}, {"transA", int64_t{0}}, {"transB", int64_t{1}}};
}

TEST(GpuSplitK, ChoosesSlicesForFewTileMatMulsAndGemms) {
  // A GPT-2 block at sequence 128: 128 x 768 x 3072 is 24 tiles of 64 x 64
  // (11 slices of 288: 264 blocks), 128 x 3072 x 768 96 (2 of 384).
  EXPECT_EQ(chooseSplitK(*gpuNode("MatMul", {f32({1, 128, 3072}), f32({3072, 768})})->node), 288);
  EXPECT_EQ(chooseSplitK(*gpuNode("MatMul", {f32({1, 128, 768}), f32({768, 3072})})->node), 384);
  // A batch-4 Linear (Gemm, transB, C a row [N]): 16 tiles of 32 x 32, 49
  // steps of 16 in 6 slices of 9 steps, rounded up to the narrow tile's K
  // step of 32: 5 slices of 160. At batch 1 it is a matrix-vector product,
  // never split.
  EXPECT_EQ(chooseSplitK(
                *gpuNode("Gemm", {f32({4, 784}), f32({512, 784}), f32({512})}, gemmAttrs())->node),
            160);
  EXPECT_EQ(chooseSplitK(
                *gpuNode("Gemm", {f32({1, 784}), f32({512, 784}), f32({512})}, gemmAttrs())->node),
            0);
  // Not: alpha != 1, a C that is no row or has beta != 1, short K, enough
  // tiles.
  EXPECT_EQ(
      chooseSplitK(
          *gpuNode("Gemm", {f32({4, 784}), f32({512, 784}), f32({512})}, gemmAttrs(0.5))->node),
      0);
  EXPECT_EQ(chooseSplitK(*gpuNode("Gemm", {f32({4, 784}), f32({512, 784}), f32({1, 512})},
                                  gemmAttrs(1.0, 2.0))
                              ->node),
            0);
  EXPECT_EQ(
      chooseSplitK(
          *gpuNode("Gemm", {f32({2, 784}), f32({512, 784}), f32({2, 512})}, gemmAttrs())->node),
      0);
  EXPECT_EQ(chooseSplitK(*gpuNode("MatMul", {f32({65, 192}), f32({192, 192})})->node), 0);
  EXPECT_EQ(chooseSplitK(*gpuNode("MatMul", {f32({2048, 1024}), f32({1024, 2048})})->node), 0);
}

// The node's outputs on random inputs, by its op's reference.
std::map<const Value*, std::vector<float>> run(const Graph& g, std::mt19937_64& rng,
                                               std::map<const Value*, std::vector<float>> mem) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (const Value* v : g.inputs)
    if (!mem.count(v)) {
      mem[v].resize(static_cast<size_t>(v->type.numel()));
      for (float& x : mem[v]) x = dist(rng);
    }
  for (const auto& node : g.nodes) {
    std::vector<const void*> in;
    std::vector<void*> out;
    for (const Value* v : node->inputs) in.push_back(v ? mem.at(v).data() : nullptr);
    for (const Value* v : node->outputs) {
      mem[v].assign(static_cast<size_t>(v->type.numel()), NAN);
      out.push_back(mem[v].data());
    }
    findOp(node->op)->reference(*node, in, out);
  }
  return mem;
}

// Splits g's one product (chooseSplitK) into a partial product of `slices`
// slices and a nanoc.SplitKSum, and checks that the same inputs give the
// same Y (the slices summed in another order: within f32 rounding). Y before
// the split, by the references, goes to *y_before.
void expectSameAfterSplit(SingleNodeGraph& g, int64_t slices,
                          std::vector<float>* y_before = nullptr) {
  Value* y = g.node->outputs[0];
  std::mt19937_64 rng(11);
  std::map<const Value*, std::vector<float>> before = run(g.graph, rng, {});
  ASSERT_EQ(splitGpuProductsAlongK(g.graph, chooseSplitK), 1u);
  ASSERT_EQ(g.graph.nodes.size(), 2u);
  EXPECT_EQ(g.graph.nodes[0]->outputs[0]->type.dims[0], slices);
  EXPECT_EQ(g.graph.nodes[0]->inputs.size(), 2u);
  EXPECT_EQ(g.graph.nodes[1]->op, "nanoc.SplitKSum");
  std::map<const Value*, std::vector<float>> inputs;
  for (const Value* v : g.graph.inputs) inputs[v] = before.at(v);
  std::map<const Value*, std::vector<float>> after = run(g.graph, rng, inputs);
  const std::vector<float>& a = before.at(y);
  const std::vector<float>& b = after.at(y);
  ASSERT_EQ(a.size(), b.size());
  double diff = 0, norm = 0;
  for (size_t i = 0; i < a.size(); ++i) diff += (a[i] - b[i]) * (a[i] - b[i]), norm += a[i] * a[i];
  EXPECT_LT(std::sqrt(diff / norm), 1e-6);
  if (y_before) *y_before = a;
}

TEST(GpuSplitK, SplitsTheProductAndMovesItsEpilogueToTheSum) {
  for (bool epilogue : {false, true}) {
    std::unique_ptr<SingleNodeGraph> g = conv(1, 7, 64, 40, epilogue);
    Value* y = g->node->outputs[0];
    std::vector<float> y_before;
    ASSERT_NO_FATAL_FAILURE(expectSameAfterSplit(*g, 4, &y_before));
    const Node& partial = *g->graph.nodes[0];
    const Node& sum = *g->graph.nodes[1];
    EXPECT_EQ(partial.op, "nanoc.ConvNHWC");
    EXPECT_EQ(splitKChunk(partial), 144);
    EXPECT_FALSE(partial.has("fused_activation"));
    EXPECT_EQ(partial.outputs[0]->type.dims, (Ints{4, 1, 7, 7, 40}));
    EXPECT_TRUE(isGpuNode(sum));
    EXPECT_EQ(sum.outputs[0], y);  // the product's value, its name included
    ASSERT_EQ(sum.inputs.size(), epilogue ? 3u : 2u);
    EXPECT_EQ(sum.inputs[0], partial.outputs[0]);
    EXPECT_EQ(sum.has("fused_activation"), epilogue);
    size_t positive = 0;
    for (float v : y_before) positive += v > 0;
    if (epilogue) EXPECT_LT(positive, y_before.size());  // Relu clipped some
  }
}

TEST(GpuSplitK, MatMulWithBiasAndResidualAndGemmWithCAreTheSameSplit) {
  // MatMul's fused bias [1, N], a residual and Relu; Gemm's C [N] as the
  // sum's bias.
  expectSameAfterSplit(
      *gpuNode("MatMul", {f32({1, 128, 3072}), f32({3072, 768}), f32({1, 768}), f32({1, 128, 768})},
               {{"fused_activation", std::string("Relu")}}),
      11);
  expectSameAfterSplit(*gpuNode("Gemm", {f32({4, 784}), f32({512, 784}), f32({512})}, gemmAttrs()),
                       5);
}

// tileFor's choice, seen in the launch's grid: 128 x 128 where it gives
// every SM of an H100 (132) a block, else 64 x 64 where its blocks times
// split-K's slices do, else 32 x 32; the same tile after the split; a
// product of one row, no tile.
TEST(GpuSplitK, TileGivesEverySmABlock) {
  auto grid = [](const Node* node) {
    GpuLaunch l = findGpuLowering(node->op)->launch(*node);
    return std::vector<uint32_t>{l.grid[0], l.grid[1], l.grid[2]};
  };
  using G = std::vector<uint32_t>;
  // 2048^3: 256 tiles of 128 x 128; 1024^3: 64 of them, 256 of 64 x 64.
  EXPECT_EQ(grid(gpuNode("MatMul", {f32({2048, 2048}), f32({2048, 2048})})->node), (G{16, 16, 1}));
  EXPECT_EQ(grid(gpuNode("MatMul", {f32({1024, 1024}), f32({1024, 1024})})->node), (G{16, 16, 1}));
  // bert_tiny: 128 x 384 x 128 (K too short to split) and its attention's
  // 2 heads of 128 x 128 x 64 on 32 x 32.
  EXPECT_EQ(grid(gpuNode("MatMul", {f32({1, 128, 128}), f32({128, 384}), f32({384})})->node),
            (G{12, 4, 1}));
  EXPECT_EQ(grid(gpuNode("MatMul", {f32({1, 2, 128, 64}), f32({1, 2, 64, 128})})->node),
            (G{4, 4, 2}));
  // A GPT-2 block's 128 x 768 x 3072: 24 tiles of 64 x 64 times 11 slices;
  // split, the same tile.
  std::unique_ptr<SingleNodeGraph> g =
      gpuNode("MatMul", {f32({1, 128, 3072}), f32({3072, 768}), f32({768})});
  EXPECT_EQ(grid(g->node), (G{12, 2, 1}));
  ASSERT_EQ(splitGpuProductsAlongK(g->graph, chooseSplitK), 1u);
  EXPECT_EQ(grid(g->graph.nodes[0].get()), (G{12, 2, 11}));
  // One row a batch: a matrix-vector product, 8 outputs a block where B's
  // k is contiguous (Gemm's transB), else 32.
  EXPECT_EQ(grid(gpuNode("Gemm", {f32({1, 784}), f32({512, 784}), f32({512})}, gemmAttrs())->node),
            (G{64, 1, 1}));
  EXPECT_EQ(grid(gpuNode("MatMul", {f32({3, 1, 784}), f32({3, 784, 500})})->node), (G{16, 1, 3}));
  // Pinned by the attribute gpu_tile; another size is refused.
  EXPECT_EQ(
      grid(gpuNode("MatMul", {f32({1, 128, 3072}), f32({3072, 768})}, {{"gpu_tile", int64_t{128}}})
               ->node),
      (G{6, 1, 1}));
  EXPECT_THROW(
      grid(gpuNode("MatMul", {f32({64, 64}), f32({64, 64})}, {{"gpu_tile", int64_t{16}}})->node),
      CompileError);
}

TEST(GpuSplitK, LeavesHostNodesAndWhatTheChooserDeclines) {
  std::unique_ptr<SingleNodeGraph> g = conv(1, 7, 512, 512, true);
  EXPECT_EQ(splitGpuProductsAlongK(g->graph, nullptr), 0u);
  EXPECT_EQ(splitGpuProductsAlongK(g->graph, [](const Node&) { return int64_t{0}; }), 0u);
  g->node->attrs.erase(kDeviceAttribute);
  EXPECT_EQ(splitGpuProductsAlongK(g->graph, chooseSplitK), 0u);
  EXPECT_EQ(g->graph.nodes.size(), 1u);
  EXPECT_EQ(splitKChunk(*g->graph.nodes[0]), 0);
}

TEST(GpuSplitK, ShapeRulesRefuseMalformedSplits) {
  // A split ConvNHWC with a bias, and a sum whose bias or residual does not
  // fit its output, are errors naming the node.
  EXPECT_THROW(makeSingleNodeGraphWithAbsent("nanoc.ConvNHWC",
                                             {f32({1, 7, 7, 64}), f32({3, 3, 64, 40}), f32({40})},
                                             {{"group", int64_t{1}},
                                              {"kernel_shape", Ints{3, 3}},
                                              {"pads", Ints{1, 1, 1, 1}},
                                              {"strides", Ints{1, 1}},
                                              {"dilations", Ints{1, 1}},
                                              {"split_k_chunk", int64_t{144}}}),
               CompileError);
  EXPECT_THROW(
      makeSingleNodeGraphWithAbsent("nanoc.SplitKSum", {f32({4, 1, 7, 7, 40}), f32({41})}, {}),
      CompileError);
  EXPECT_THROW(
      makeSingleNodeGraphWithAbsent("nanoc.SplitKSum",
                                    {f32({4, 1, 7, 7, 40}), std::nullopt, f32({1, 7, 7, 41})}, {}),
      CompileError);
  EXPECT_THROW(makeSingleNodeGraphWithAbsent("nanoc.SplitKSum", {f32({40})}, {}), CompileError);
}

}  // namespace
}  // namespace nanoc::gpu
