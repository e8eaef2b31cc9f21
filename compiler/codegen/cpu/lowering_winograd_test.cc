// nanoc.Winograd against its reference (the transforms in double) on every
// register tile this machine runs: partial tiles at the bottom and right
// edges, every padding, several blocks of tiles and of rows, two images; and
// conv_to_gemm's rewrite of a 3x3 Conv into it matching the Conv's own
// reference (the compile-time weight transform included).
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "compiler/codegen/cpu/kernel_test_util.h"
#include "compiler/ir/error.h"
#include "compiler/ops/epilogue.h"
#include "compiler/passes/conv_to_gemm.h"

namespace nanoc::cpu {
namespace {

using testing::AlignedBuffer;
using Attrs = std::map<std::string, Attr>;
using Dims = std::vector<int64_t>;

TensorType f32(Dims dims) { return {DType::F32, std::move(dims)}; }

Attrs winogradAttrs(int64_t tile, Dims pads, Dims x, int64_t m) {
  return {{"tile", tile},
          {"out_channels", m},
          {"pads", pads},
          {"panel", int64_t{96}},
          {"output_spatial", Dims{x[2] + pads[0] + pads[2] - 2, x[3] + pads[1] + pads[3] - 2}}};
}

TEST(WinogradLowering, EveryShapeOnEveryTile) {
  struct Case {
    Dims x;
    int64_t m, tile;
    Dims pads;
    bool bias;
    int64_t tile_rows = 0;
  };
  std::vector<Case> cases = {
      {{1, 16, 14, 14}, 16, 4, {1, 1, 1, 1}, true},
      // Partial tiles at both edges, channels off every tile's rows.
      {{1, 5, 13, 11}, 13, 4, {1, 1, 1, 1}, false},
      {{2, 3, 9, 10}, 7, 4, {0, 1, 2, 0}, true},
      {{1, 4, 8, 8}, 6, 4, {0, 0, 0, 0}, true},
      {{1, 6, 10, 9}, 11, 2, {1, 2, 1, 0}, true},
      // 225 tiles of 16 channels: two blocks of tiles (192 + 33).
      {{1, 16, 60, 60}, 8, 4, {1, 1, 1, 1}, true},
      // 100 rows: two blocks of rows of 96; one block of tiles, two groups.
      {{1, 8, 12, 12}, 100, 4, {1, 1, 1, 1}, true},
      // Transposed products (tiles as rows): 16 tiles and 100 channels in
      // panels of 96 (one partial), two groups of rows.
      {{1, 16, 7, 7}, 100, 2, {1, 1, 1, 1}, true, 96},
      // 12 tiles (fewer than a register tile's rows on some ISAs), two images.
      {{2, 9, 14, 13}, 200, 4, {1, 0, 1, 1}, false, 96},
      // 225 tiles in two blocks: rows past one tile row and one panel.
      {{1, 16, 60, 60}, 96, 4, {1, 1, 1, 1}, true, 96},
  };
  uint64_t seed = 5000;
  for (const Case& c : cases) {
    const int64_t t = c.tile + 2, group = c.tile_rows > 0 ? c.tile_rows : 24;
    std::vector<TensorType> inputs = {f32(c.x),
                                      f32({t * t, (c.m + group - 1) / group, c.x[1], group})};
    if (c.bias) inputs.push_back(f32({c.m}));
    Attrs attrs = winogradAttrs(c.tile, c.pads, c.x, c.m);
    if (c.tile_rows > 0) attrs["tile_rows"] = c.tile_rows;
    auto g = testing::makeSingleNodeGraph("nanoc.Winograd", inputs, attrs);
    ASSERT_GT(findLowering("nanoc.Winograd")->scratch_bytes(*g->node), 0u);
    testing::expectMatchesOnEveryTile(*g->node, seed++, testing::describe("nanoc.Winograd", inputs),
                                      {1});
  }
}

// The channel-blocked form (`block`: X, Y and the bias blocked, U in panels
// of tile_rows output channels) on each tile whose vector width is the
// block, and refused on the others: input and output channels off the
// block (the last block part empty), partial tiles at the edges, several
// blocks of tiles and of rows, two images, and a fused residual and
// activation (the epilogue on whole vectors, the padding lanes included).
TEST(WinogradLowering, BlockedOnTheTilesOfItsWidth) {
  struct Case {
    Dims x;  // [N, C, H, W]: the plain shape
    int64_t m, tile;
    Dims pads;
    bool bias;
    std::string activation;
    bool residual;
  };
  const std::vector<Case> cases = {
      {{1, 16, 14, 14}, 100, 4, {1, 1, 1, 1}, true, "", false},
      {{2, 20, 13, 11}, 40, 2, {1, 0, 1, 1}, false, "Relu", true},
      // F(2x2): random U through F(4x4)'s larger coefficients cancels to
      // outputs whose rounding a bounded activation shows (as
      // EpilogueLowering.Winograd).
      {{1, 7, 9, 10}, 96, 2, {0, 1, 2, 0}, true, "Sigmoid", false},
      // 225 tiles: several blocks of tiles; 200 channels: several row blocks.
      {{1, 16, 60, 60}, 200, 4, {1, 1, 1, 1}, true, "Relu", true},
      // 49 tiles: two blocks, 24 + 25 (a short last block joins the one
      // before: BlockedTilesSplitEvenly).
      {{1, 128, 28, 28}, 32, 4, {1, 1, 1, 1}, true, "Relu", true},
  };
  uint64_t seed = 5200;
  for (const int64_t block : {4, 8, 16})
    for (const Case& c : cases) {
      const int64_t t = c.tile + 2, g = 96, icb = (c.x[1] + block - 1) / block;
      const int64_t ocb = (c.m + block - 1) / block;
      std::vector<TensorType> inputs = {f32({c.x[0], icb, c.x[2], c.x[3], block}),
                                        f32({t * t, (c.m + g - 1) / g, c.x[1], g})};
      inputs.push_back(c.bias ? f32({ocb * block}) : TensorType{});
      Attrs attrs = winogradAttrs(c.tile, c.pads, c.x, c.m);
      attrs["tile_rows"] = g;
      attrs["block"] = block;
      Graph graph;
      std::vector<Value*> values = {graph.addInput("x", inputs[0]), graph.addInput("u", inputs[1]),
                                    c.bias ? graph.addInput("bias", inputs[2]) : nullptr};
      Node* node = graph.addNode("nanoc.Winograd", "n0", values, 1);
      node->attrs = attrs;
      inferNode(*node);
      const Dims y = {c.x[0], ocb, c.x[2] + c.pads[0] + c.pads[2] - 2,
                      c.x[3] + c.pads[1] + c.pads[3] - 2, block};
      ASSERT_EQ(node->outputs[0]->type.dims, y);
      if (c.residual) {
        node->inputs.resize(kResidualInput + 1, nullptr);
        node->inputs[kResidualInput] = graph.addInput("residual", node->outputs[0]->type);
      }
      if (!c.activation.empty()) node->attrs["fused_activation"] = c.activation;
      inferNode(*node);
      inputs.resize(node->inputs.size());
      if (c.residual) inputs[kResidualInput] = node->outputs[0]->type;
      const std::string what = testing::describe("nanoc.Winograd", inputs) + " block " +
                               std::to_string(block) + " " + c.activation;
      SCOPED_TRACE(what);
      std::mt19937_64 rng(seed++);
      std::vector<AlignedBuffer> data;
      for (const Value* in : node->inputs) {
        data.emplace_back(in ? in->type.bytes() : 0);
        if (in) testing::fillRandom(data.back(), in->type, rng);
      }
      node->inputs[1]->data = std::make_shared<std::vector<uint8_t>>(
          data[1].data(), data[1].data() + inputs[1].bytes());
      int64_t ran = 0;
      for (const testing::KernelAttributes& target : testing::tileTargets()) {
        if (testing::tileOf(target).width == block) {
          testing::expectLoweringMatchesReference(*node, data, what, target);
          ++ran;
        } else {
          EXPECT_THROW(testing::compileKernel(*node, target), CompileError);
        }
      }
      // This machine has SSE2's 4 lanes at least (an x86-64 test host).
      if (block == 4) EXPECT_GT(ran, 0);
    }
}

// Blocked, a 28 x 28 map's 49 F(4x4) tiles run as two tasks of 24 and 25
// tiles (two threads' halves about equal), not 32 + 17: each worker's
// scratch holds the larger block's V (8 blocks of 16 channels) and its
// products (32 output channels), 36 of each.
TEST(WinogradLowering, BlockedTilesSplitEvenly) {
  const Dims x = {1, 128, 28, 28};
  Attrs attrs = winogradAttrs(4, {1, 1, 1, 1}, x, 32);
  attrs["tile_rows"] = int64_t{96};
  attrs["block"] = int64_t{16};
  Graph graph;
  Node* node = graph.addNode(
      "nanoc.Winograd", "n0",
      {graph.addInput("x", f32({1, 8, 28, 28, 16})), graph.addInput("u", f32({36, 1, 128, 96}))},
      1);
  node->attrs = attrs;
  inferNode(*node);
  const Lowering* lowering = findLowering("nanoc.Winograd");
  EXPECT_EQ(lowering->task_count(*node), 2u);
  EXPECT_EQ(lowering->scratch_bytes(*node), 4u * 36 * (8 * 25 * 16 + 32 * 25));
}

TEST(WinogradSchema, RejectsBadTilesPadsAndWeights) {
  auto build = [](Dims x, Dims u, Attrs attrs) {
    testing::makeSingleNodeGraph("nanoc.Winograd", {f32(x), f32(u)}, attrs);
  };
  const Dims x = {1, 4, 8, 8};
  const Dims u = {36, 1, 4, 24};
  EXPECT_NO_THROW(build(x, u, winogradAttrs(4, {1, 1, 1, 1}, x, 5)));
  EXPECT_THROW(build(x, u, winogradAttrs(3, {1, 1, 1, 1}, x, 5)), CompileError);
  EXPECT_THROW(build(x, {16, 1, 4, 24}, winogradAttrs(4, {1, 1, 1, 1}, x, 5)), CompileError);
  EXPECT_THROW(build(x, {36, 1, 3, 24}, winogradAttrs(4, {1, 1, 1, 1}, x, 5)), CompileError);
  EXPECT_THROW(build(x, {36, 1, 4, 12}, winogradAttrs(4, {1, 1, 1, 1}, x, 5)), CompileError);
  EXPECT_THROW(build(x, u, winogradAttrs(4, {1, 1, 1, 1}, x, 25)), CompileError);
  EXPECT_THROW(build(x, u, winogradAttrs(4, {1, 1, 1, 1}, x, 0)), CompileError);
  EXPECT_THROW(build(x, {36, 5, 4}, winogradAttrs(4, {1, 1, 1, 1}, x, 5)), CompileError);
  EXPECT_THROW(build(x, u, winogradAttrs(4, {3, 1, 1, 1}, x, 5)), CompileError);
  Attrs wrong = winogradAttrs(4, {1, 1, 1, 1}, x, 5);
  wrong["output_spatial"] = Dims{7, 8};
  EXPECT_THROW(build(x, u, wrong), CompileError);
  EXPECT_THROW(build({1, 4, 1, 1}, u, winogradAttrs(4, {0, 0, 0, 0}, {1, 4, 1, 1}, 5)),
               CompileError);
  // Transposed products: U in groups of tile_rows, a multiple of panel.
  Attrs transposed = winogradAttrs(4, {1, 1, 1, 1}, x, 5);
  transposed["tile_rows"] = int64_t{96};
  EXPECT_NO_THROW(build(x, {36, 1, 4, 96}, transposed));
  EXPECT_THROW(build(x, u, transposed), CompileError);
  transposed["tile_rows"] = int64_t{48};
  EXPECT_THROW(build(x, {36, 1, 4, 48}, transposed), CompileError);
  transposed["tile_rows"] = int64_t{-96};
  EXPECT_THROW(build(x, {36, 1, 4, 96}, transposed), CompileError);
  // Blocked: X [N, ceil(C / b), H, W, b] for U's C, tile_rows a multiple of
  // the block.
  Attrs blocked = winogradAttrs(4, {1, 1, 1, 1}, x, 5);
  blocked["tile_rows"] = int64_t{96};
  blocked["block"] = int64_t{16};
  EXPECT_NO_THROW(build({1, 1, 8, 8, 16}, {36, 1, 4, 96}, blocked));
  EXPECT_THROW(build({1, 2, 8, 8, 16}, {36, 1, 4, 96}, blocked), CompileError);
  EXPECT_THROW(build({1, 1, 8, 8, 8}, {36, 1, 4, 96}, blocked), CompileError);
  EXPECT_THROW(build(x, {36, 1, 4, 96}, blocked), CompileError);
  blocked["tile_rows"] = int64_t{0};
  EXPECT_THROW(build({1, 1, 8, 8, 16}, u, blocked), CompileError);
  blocked["tile_rows"] = int64_t{96};
  blocked["block"] = int64_t{-16};
  EXPECT_THROW(build({1, 1, 8, 8, 16}, {36, 1, 4, 96}, blocked), CompileError);
}

// The rewrite picks Winograd for 3x3 stride-1 Convs with enough channels and
// tiles, and the rewritten node matches the Conv's reference (direct sums in
// double) within the harness's 1e-5 of the largest output.
TEST(ConvToWinograd, RewrittenConvMatchesConv) {
  struct Case {
    Dims x, w, pads;
  };
  std::vector<Case> cases = {
      {{1, 16, 14, 14}, {16, 16, 3, 3}, {1, 1, 1, 1}},
      {{1, 20, 17, 15}, {24, 20, 3, 3}, {0, 1, 2, 0}},
      {{2, 64, 16, 16}, {32, 64, 3, 3}, {1, 1, 1, 1}},
      {{1, 32, 7, 7}, {40, 32, 3, 3}, {1, 1, 1, 1}},
      // 16 tiles and a panel's worth of output channels: transposed products.
      {{1, 16, 7, 7}, {100, 16, 3, 3}, {1, 1, 1, 1}},
  };
  const std::vector<testing::KernelAttributes> targets = testing::tileTargets();
  uint64_t seed = 5100;
  for (const Case& c : cases) {
    Attrs attrs = {{"kernel_shape", Dims{3, 3}},
                   {"pads", c.pads},
                   {"strides", Dims{1, 1}},
                   {"dilations", Dims{1, 1}},
                   {"group", int64_t{1}}};
    std::vector<TensorType> inputs = {f32(c.x), f32(c.w), f32({c.w[0]})};
    SCOPED_TRACE(testing::describe("Conv", inputs));
    testing::ConvWithReference conv = testing::convWithReference(inputs, attrs, seed++);
    auto& g = conv.g;
    std::vector<AlignedBuffer>& data = conv.data;
    ASSERT_EQ(convToGemm(g->graph, 96, /*winograd=*/true), 1);
    Node& node = *g->graph.nodes.back();
    ASSERT_EQ(node.op, "nanoc.Winograd");
    EXPECT_EQ(node.i("tile_rows", 0), c.w[0] >= 96 ? 96 : 0);
    const Value* u = node.inputs[1];
    ASSERT_TRUE(u->isConstant());
    for (const testing::KernelAttributes& target : targets) {
      testing::JitKernel kernel = testing::compileKernel(node, target);
      AlignedBuffer got(node.outputs[0]->type.bytes());
      testing::runKernel(
          kernel, {data[0].data(), const_cast<float*>(u->as<float>()), data[2].data(), got.data()});
      testing::expectOutputMatches(node.outputs[0]->type, got, conv.want, "Conv as nanoc.Winograd");
    }
  }
  // Too few channels or tiles: the packed product.
  EXPECT_EQ(winogradTile(8, 64, 56, 56), 0);
  EXPECT_EQ(winogradTile(64, 64, 5, 5), 0);
  // A 7 x 7 map: F(2x2, 3x3)'s 16 tiles rather than F(4x4)'s 4.
  EXPECT_EQ(winogradTile(64, 64, 7, 7), 2);
  EXPECT_EQ(winogradTile(64, 64, 14, 14), 4);
  // 13 x 13: F(4x4)'s 16 tiles would be a third outside the map.
  EXPECT_EQ(winogradTile(64, 64, 13, 13), 2);
  EXPECT_EQ(winogradTile(64, 64, 55, 55), 4);
}

}  // namespace
}  // namespace nanoc::cpu
