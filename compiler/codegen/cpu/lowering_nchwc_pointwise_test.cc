// The pointwise form of nanoc.ConvNCHWc (the packed product over pixels with
// a channel-blocked A and Y) and nanoc.Pack, nanoc.Unpack and
// nanoc.GlobalAveragePoolNCHWc against their references on random inputs,
// on every register tile this machine runs: blocks of 4, 8 and 16 lanes;
// maps of one pixel, 7 x 7 (a partial tile of rows), 14 x 14 and wider than
// a task's rows; two tasks of half the rows, each ending in a partial tile;
// K deep enough to take several kc blocks (partial sums kept in the blocked
// Y); output channels filling part of the last panel; two images; bias,
// residual and activation.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "compiler/codegen/cpu/kernel_test_util.h"
#include "compiler/codegen/cpu/target.h"
#include "compiler/ir/error.h"
#include "compiler/ops/conv_gemm.h"
#include "compiler/ops/nchwc.h"

namespace nanoc::cpu {
namespace {

using Attrs = std::map<std::string, Attr>;
using Dims = std::vector<int64_t>;

TensorType f32(Dims dims) { return {DType::F32, std::move(dims)}; }

struct Pointwise {
  int64_t n, ic, oc, h, w, block, panel;
  bool bias = true;
  std::string activation;  // fused_activation, empty: none
  bool residual = false;
};

// The pointwise form's attributes: blocks of `block` lanes to `oc` channels,
// W in panels of `panel` columns.
Attrs pointwiseAttrs(int64_t block, int64_t oc, int64_t panel) {
  return {{"form", std::string("pointwise")},
          {"block", block},
          {"out_channels", oc},
          {"kernel_shape", Dims{1, 1}},
          {"strides", Dims{1, 1}},
          {"pads", Dims{0, 0, 0, 0}},
          {"panel", panel}};
}

void expectPointwiseMatches(const Pointwise& c, uint64_t seed) {
  const int64_t b = c.block, icb = channelBlocks(c.ic, b), ocb = channelBlocks(c.oc, b);
  std::vector<TensorType> inputs = {f32({c.n, icb, c.h, c.w, b}),
                                    f32({channelBlocks(ocb * b, c.panel), c.ic, c.panel})};
  if (c.bias || c.residual) inputs.push_back(f32({ocb * b}));
  if (c.residual) inputs.push_back(f32({c.n, ocb, c.h, c.w, b}));
  Attrs attrs = pointwiseAttrs(b, c.oc, c.panel);
  if (!c.activation.empty()) attrs["fused_activation"] = c.activation;
  if (c.activation == "Clip") attrs["fused_alpha"] = 0.0, attrs["fused_beta"] = 6.0;
  auto g = testing::makeSingleNodeGraph("nanoc.ConvNCHWc", inputs, attrs);
  std::string what = testing::describe("nanoc.ConvNCHWc pointwise", inputs) + " block " +
                     std::to_string(b) + " panel " + std::to_string(c.panel) + " " + c.activation;
  testing::expectMatchesOnEveryTile(*g->node, seed, what, {1});
}

TEST(NchwcPointwiseLowering, EveryBlockAndMap) {
  uint64_t seed = 1;
  for (auto [b, panel] : {std::pair<int64_t, int64_t>{16, 32}, {8, 16}, {4, 24}}) {
    expectPointwiseMatches({1, 32, 24, 7, 7, b, panel}, seed++);
    expectPointwiseMatches({1, 20, 40, 14, 14, b, panel}, seed++);
    expectPointwiseMatches({1, 16, 96, 1, 1, b, panel}, seed++);
    expectPointwiseMatches({2, 24, 16, 5, 3, b, panel}, seed++);
    expectPointwiseMatches({1, 16, 8, 3, 112, b, panel, false}, seed++);
  }
}

// Several kc blocks where the tile is narrower than 16 lanes (on 16-lane
// tiles K runs as one block: OneKBlockOnSixteenLaneTiles).
TEST(NchwcPointwiseLowering, DeepKTakesSeveralBlocks) {
  expectPointwiseMatches({1, 960, 48, 7, 7, 16, 32}, 11);
  expectPointwiseMatches({1, 1152, 40, 2, 3, 8, 16}, 12);
}

// Whether the kernel of resnet50's layer3 conv1 (1024 -> 256 on 14 x 14, no
// residual) for a target of `features` and `l2` bytes of L2 keeps partial
// sums in Y between kc blocks (its tiles' "tile.partial" stores).
bool storesPartialSums(int64_t block, int64_t panel, const std::string& cpu,
                       const std::string& features, const std::string& l2) {
  const std::vector<TensorType> inputs = {f32({1, 1024 / block, 14, 14, block}),
                                          f32({256 / panel, 1024, panel})};
  auto g =
      testing::makeSingleNodeGraph("nanoc.ConvNCHWc", inputs, pointwiseAttrs(block, 256, panel));
  llvm::LLVMContext ctx;
  auto module = testing::buildKernelModule(*g->node, ctx, "k",
                                           {{"target-cpu", cpu},
                                            {"target-features", features},
                                            {kL1DataCacheAttribute, "32768"},
                                            {kL2CacheAttribute, l2}});
  for (const llvm::BasicBlock& b : *module->getFunction("k"))
    if (b.getName().starts_with("tile.partial")) return true;
  return false;
}

// On a 16-lane tile with 1 MiB of L2 (Zen 4, skylake-avx512, x86-64-v4)
// the 1024-deep product runs as one K block, where packedKBlock would take
// two of 512, and with 256 KiB too; an 8-lane tile with 256 KiB (x86-64-v3)
// keeps its blocks. Both match.
TEST(NchwcPointwiseLowering, OneKBlockOnSixteenLaneTiles) {
  const std::string avx512 = "+avx,+avx2,+fma,+avx512f";
  EXPECT_FALSE(storesPartialSums(16, 32, "skylake-avx512", avx512, "1048576"));
  EXPECT_FALSE(storesPartialSums(16, 32, "skylake-avx512", avx512, "262144"));
  EXPECT_TRUE(storesPartialSums(8, 16, "haswell", "+avx,+avx2,+fma", "262144"));
  expectPointwiseMatches({1, 1024, 256, 14, 14, 16, 32}, 15);
}

// 49 pixels of 2048 channels (A 392 KiB, past a task's 256 KiB): one block
// of all the rows, whose tasks split the output channels, rather than 24 +
// 24 + 1 rows that would each read all of W; and it still matches.
TEST(NchwcPointwiseLowering, FewDeepPixelsAreOneRowBlock) {
  const Pointwise c = {1, 2048, 64, 7, 7, 16, 32};
  expectPointwiseMatches(c, 13);
  const std::vector<TensorType> inputs = {f32({1, 128, 7, 7, 16}), f32({2, 2048, 32})};
  auto g = testing::makeSingleNodeGraph("nanoc.ConvNCHWc", inputs, pointwiseAttrs(16, 64, 32));
  EXPECT_LE(findLowering("nanoc.ConvNCHWc")->task_count(*g->node), 2u);
}

// 14 x 14 pixels of 1024 channels to 256 (resnet50's layer3 conv1; A 784
// KiB, W 1 MiB): two tasks of half the rows each, which end in a partial
// tile of their own (98 rows; 98 and 97 on 13 x 15, a different tail in the
// last block), and they still match.
TEST(NchwcPointwiseLowering, HalfTheRowsEndInTheirOwnPartialTiles) {
  uint64_t seed = 14;
  for (auto [h, w] : {std::pair<int64_t, int64_t>{14, 14}, {13, 15}}) {
    Pointwise c = {1, 1024, 256, h, w, 16, 32};
    c.residual = true;
    c.activation = "Relu";
    expectPointwiseMatches(c, seed++);
    const std::vector<TensorType> inputs = {f32({1, 64, h, w, 16}), f32({8, 1024, 32})};
    auto g = testing::makeSingleNodeGraph("nanoc.ConvNCHWc", inputs, pointwiseAttrs(16, 256, 32));
    EXPECT_EQ(findLowering("nanoc.ConvNCHWc")->task_count(*g->node), 2u);
  }
}

// The accumulator tiles of a pointwise kernel for AVX-512 (12 x 32, room
// for 14 rows), one multiset entry per tile: its accumulators (the
// <16 x float> phis of its K loop's header).
std::multiset<int> avx512TileAccumulators(int64_t h, int64_t w) {
  const std::vector<TensorType> inputs = {f32({1, 4, h, w, 16}), f32({2, 64, 32})};
  auto g = testing::makeSingleNodeGraph("nanoc.ConvNCHWc", inputs, pointwiseAttrs(16, 64, 32));
  llvm::LLVMContext ctx;
  auto module = testing::buildKernelModule(
      *g->node, ctx, "k",
      {{"target-cpu", "skylake-avx512"}, {"target-features", "+avx,+avx2,+fma,+avx512f"}});
  std::multiset<int> tiles;
  for (const llvm::BasicBlock& block : *module->getFunction("k")) {
    if (!block.getName().starts_with("tile.k")) continue;
    int accumulators = 0;
    for (const llvm::PHINode& phi : block.phis())
      if (phi.getType()->isVectorTy()) ++accumulators;
    tiles.insert(accumulators);
  }
  return tiles;
}

// A tail of one or two rows joins the last whole tile where the registers
// hold it (12 x 32 on AVX-512 leaves room for 14 rows): a 7 x 7 map's 49
// pixels are tiles of 12 and 13 rows, not a 1-row tile whose two
// accumulators wait on the multiply-add latency; 50 pixels end in 14 rows;
// 51 keep their 3-row tile. Each still matches.
TEST(NchwcPointwiseLowering, AShortTailJoinsTheLastWholeTile) {
  EXPECT_EQ(avx512TileAccumulators(7, 7), (std::multiset<int>{24, 26}));
  EXPECT_EQ(avx512TileAccumulators(5, 10), (std::multiset<int>{24, 28}));
  EXPECT_EQ(avx512TileAccumulators(3, 17), (std::multiset<int>{24, 6}));
  uint64_t seed = 40;
  for (auto [h, w] : {std::pair<int64_t, int64_t>{7, 7}, {5, 10}, {1, 13}, {1, 14}}) {
    Pointwise c = {1, 64, 64, h, w, 16, 32};
    c.residual = true;
    c.activation = "Relu";
    expectPointwiseMatches(c, seed++);
  }
}

TEST(NchwcPointwiseLowering, EpilogueOnTheBlockedStore) {
  uint64_t seed = 21;
  for (const char* act : {"Relu", "Clip", "SiLU", "Sigmoid"}) {
    Pointwise c{1, 24, 40, 7, 7, 16, 32};
    c.activation = act;
    expectPointwiseMatches(c, seed++);
    c.residual = true;
    expectPointwiseMatches(c, seed++);
    c.n = 2, c.block = 8, c.panel = 16;
    expectPointwiseMatches(c, seed++);
  }
}

// A squeeze-and-excitation's channel scale folded in (input 4): each task
// scales W's panels into its scratch. Absent inputs are null in the node and
// take no buffer.
TEST(NchwcPointwiseLowering, ChannelScaleOnEveryTile) {
  struct Case {
    int64_t n, ic, oc, h, w, block, panel;
    bool bias, residual;
  };
  const std::vector<Case> cases = {{1, 32, 16, 28, 28, 16, 32, true, false},
                                   {2, 24, 40, 9, 9, 8, 16, false, true},
                                   {1, 20, 24, 12, 12, 4, 24, true, true},
                                   // few pixels, many columns: tasks of column blocks,
                                   // each scaling its own panels
                                   {2, 64, 200, 5, 4, 16, 32, true, false}};
  uint64_t seed = 60;
  for (const Case& c : cases) {
    const int64_t b = c.block, icb = channelBlocks(c.ic, b), ocb = channelBlocks(c.oc, b);
    std::vector<std::optional<TensorType>> inputs = {
        f32({c.n, icb, c.h, c.w, b}), f32({channelBlocks(ocb * b, c.panel), c.ic, c.panel}),
        f32({ocb * b}), f32({c.n, ocb, c.h, c.w, b}), f32({c.n, icb, 1, 1, b})};
    if (!c.bias) inputs[2] = std::nullopt;
    if (!c.residual) inputs[3] = std::nullopt;
    Attrs attrs = {{"form", std::string("pointwise")},
                   {"block", b},
                   {"out_channels", c.oc},
                   {"kernel_shape", Dims{1, 1}},
                   {"strides", Dims{1, 1}},
                   {"pads", Dims{0, 0, 0, 0}},
                   {"panel", c.panel},
                   {"fused_activation", std::string("Relu")}};
    auto g = testing::makeSingleNodeGraphWithAbsent("nanoc.ConvNCHWc", inputs, attrs);
    ASSERT_TRUE(convNchwcShape(*g->node).has_scale);
    testing::expectMatchesOnEveryTile(*g->node, seed++,
                                      "nanoc.ConvNCHWc scaled, " + std::to_string(c.ic) + " -> " +
                                          std::to_string(c.oc) + " block " + std::to_string(b),
                                      {1});
  }
  // A scale on the depthwise form is refused.
  EXPECT_THROW(testing::makeSingleNodeGraph("nanoc.ConvNCHWc",
                                            {f32({1, 1, 4, 4, 16}), f32({1, 3, 3, 16}), f32({16}),
                                             f32({1, 1, 4, 4, 16}), f32({1, 1, 1, 1, 16})},
                                            {{"form", std::string("depthwise")},
                                             {"block", int64_t{16}},
                                             {"out_channels", int64_t{16}},
                                             {"kernel_shape", Dims{3, 3}},
                                             {"strides", Dims{1, 1}},
                                             {"pads", Dims{1, 1, 1, 1}}}),
               CompileError);
}

TEST(NchwcLayoutOps, PackUnpackAndPoolMatch) {
  uint64_t seed = 41;
  for (int64_t b : {4, 8, 16}) {
    for (Dims x : {Dims{1, 3, 5, 7}, Dims{2, 40, 4, 4}, Dims{1, 16, 1, 1}}) {
      testing::expectLoweringMatchesReference("nanoc.Pack", {f32(x)}, {{"block", b}}, seed++);
      const int64_t cb = channelBlocks(x[1], b);
      testing::expectLoweringMatchesReference("nanoc.Unpack", {f32({x[0], cb, x[2], x[3], b})},
                                              {{"channels", x[1]}}, seed++);
      testing::expectLoweringMatchesReference("nanoc.GlobalAveragePoolNCHWc",
                                              {f32({x[0], cb, x[2], x[3], b})}, {}, seed++);
    }
    testing::expectLoweringMatchesReference("nanoc.GlobalAveragePoolNCHWc",
                                            {f32({1, 2, 112, 112, b})}, {}, seed++);
  }
}

TEST(NchwcLayoutOps, ShapeRulesRefuseMalformedNodes) {
  // A panel that is not a multiple of the block, W of the wrong shape, an
  // Unpack whose channels do not end in its last block.
  EXPECT_THROW(
      testing::makeSingleNodeGraph("nanoc.ConvNCHWc", {f32({1, 1, 2, 2, 16}), f32({1, 16, 24})},
                                   {{"form", std::string("pointwise")},
                                    {"block", int64_t{16}},
                                    {"out_channels", int64_t{16}},
                                    {"kernel_shape", Dims{1, 1}},
                                    {"strides", Dims{1, 1}},
                                    {"pads", Dims{0, 0, 0, 0}},
                                    {"panel", int64_t{24}}}),
      CompileError);
  EXPECT_THROW(
      testing::makeSingleNodeGraph("nanoc.ConvNCHWc", {f32({1, 1, 4, 4, 16}), f32({1, 3, 3, 8})},
                                   {{"form", std::string("depthwise")},
                                    {"block", int64_t{16}},
                                    {"out_channels", int64_t{16}},
                                    {"kernel_shape", Dims{3, 3}},
                                    {"strides", Dims{1, 1}},
                                    {"pads", Dims{1, 1, 1, 1}}}),
      CompileError);
  EXPECT_THROW(testing::makeSingleNodeGraph("nanoc.Unpack", {f32({1, 2, 4, 4, 16})},
                                            {{"channels", int64_t{16}}}),
               CompileError);
  EXPECT_THROW(
      testing::makeSingleNodeGraph("nanoc.Pack", {f32({1, 4, 4, 4})}, {{"block", int64_t{12}}}),
      CompileError);
}

}  // namespace
}  // namespace nanoc::cpu
