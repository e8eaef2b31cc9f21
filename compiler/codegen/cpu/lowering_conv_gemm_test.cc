// nanoc.Im2Col and nanoc.ConvGemm against their references on random inputs,
// and the Conv they replace: the patches of every window shape (pads,
// strides, dilations, a last panel past the pixels, two images, a few
// panels split by channels), the product
// on every register tile this machine runs, and conv_to_gemm's rewrite of a
// Conv matching the Conv's own reference.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "compiler/codegen/cpu/gemm_microkernel.h"
#include "compiler/codegen/cpu/kernel_test_util.h"
#include "compiler/ir/error.h"
#include "compiler/ops/conv_gemm.h"
#include "compiler/passes/conv_to_gemm.h"

namespace nanoc::cpu {
namespace {

using testing::AlignedBuffer;
using testing::tileTargets;
using Attrs = std::map<std::string, Attr>;
using Dims = std::vector<int64_t>;

TensorType f32(Dims dims) { return {DType::F32, std::move(dims)}; }

Attrs window(Dims kernel, Dims pads, Dims strides, Dims dilations) {
  return {{"kernel_shape", kernel}, {"pads", pads}, {"strides", strides}, {"dilations", dilations}};
}

TEST(Im2ColLowering, EveryWindowShapeAndPanel) {
  uint64_t seed = 1;
  struct Case {
    Dims x;
    Attrs attrs;
  };
  std::vector<Case> cases = {
      {{1, 3, 9, 10}, window({3, 3}, {1, 1, 1, 1}, {1, 1}, {1, 1})},
      {{2, 2, 8, 7}, window({3, 3}, {1, 1, 1, 1}, {2, 2}, {1, 1})},
      {{1, 4, 11, 6}, window({3, 2}, {0, 2, 1, 0}, {1, 2}, {2, 1})},
      {{1, 3, 15, 15}, window({7, 7}, {3, 3, 3, 3}, {2, 2}, {1, 1})},
      {{1, 2, 5, 5}, window({5, 5}, {2, 2, 2, 2}, {1, 1}, {1, 1})},
      {{1, 1, 3, 40}, window({1, 1}, {0, 0, 0, 0}, {2, 2}, {1, 1})},
      // Few panels (49 pixels), so each splits its 6 channels in 4 blocks
      // (2, 2, 2, 0), over two images.
      {{2, 6, 14, 14}, window({3, 3}, {1, 1, 1, 1}, {2, 2}, {1, 1})},
  };
  for (int64_t panel : {12, 16, 24, 32, 96})
    for (Case c : cases) {
      c.attrs["panel"] = panel;
      SCOPED_TRACE("panel " + std::to_string(panel));
      std::vector<TensorType> inputs = {f32(c.x)};
      auto g = testing::makeSingleNodeGraph("nanoc.Im2Col", inputs, c.attrs);
      // The copies run V lanes at a time on vector tiles: every width.
      testing::expectMatchesOnEveryTile(*g->node, seed++,
                                        testing::describe("nanoc.Im2Col", inputs));
    }
}

// B and W random, W a constant (the lowering reads it as A in place), on each
// tile; panel 96 is a multiple of every tile's columns.
void expectConvGemmMatches(Dims b, Dims w, bool bias, int64_t panel, Dims spatial, uint64_t seed) {
  std::vector<TensorType> inputs = {f32(b), f32(w)};
  if (bias) inputs.push_back(f32({w[0]}));
  auto g = testing::makeSingleNodeGraph("nanoc.ConvGemm", inputs,
                                        {{"panel", panel}, {"output_spatial", spatial}});
  testing::expectMatchesOnEveryTile(*g->node, seed, testing::describe("nanoc.ConvGemm", inputs),
                                    {1});
}

TEST(ConvGemmLowering, PanelsOnEveryTile) {
  // Channels around the tile heights (4, 6, 8, 12), pixels around the panel.
  uint64_t seed = 100;
  for (int64_t m : {1, 5, 13, 64})
    for (int64_t pixels : {7, 96, 100}) {
      int64_t k = 27, panels = (pixels + 95) / 96;
      expectConvGemmMatches({1, panels, k, 96}, {m, 3, 3, 3}, m % 2 == 1, 96, {1, pixels}, seed++);
    }
  expectConvGemmMatches({2, 2, 18, 96}, {24, 2, 3, 3}, true, 96, {10, 11}, seed++);
}

TEST(ConvGemmLowering, DeepPatchesRunInSeveralCacheBlocks) {
  // A 3x3 window over 256 channels: K = 2304, several kc blocks on every
  // tile at the default caches (32 KiB, 512 KiB); channels that are not a
  // multiple of the tile's rows and a partial last panel.
  expectConvGemmMatches({1, 2, 2304, 96}, {30, 256, 3, 3}, true, 96, {10, 10}, 250);
  expectConvGemmMatches({1, 1, 2304, 96}, {64, 256, 3, 3}, false, 96, {7, 7}, 251);
}

TEST(ConvGemmLowering, PointwiseReadsXInPlace) {
  uint64_t seed = 200;
  for (int64_t m : {3, 12, 40})
    for (Dims hw : {Dims{1, 1}, Dims{7, 7}, Dims{5, 41}})
      expectConvGemmMatches({1, 16, hw[0], hw[1]}, {m, 16, 1, 1}, true, 0, hw, seed++);
  expectConvGemmMatches({2, 8, 6, 6}, {9, 8, 1, 1}, false, 0, {6, 6}, seed++);
}

// W grouped in 24 rows (out_channels set, as conv_to_gemm writes it), on
// every tile (mr 4, 6, 8, 12 inside a group): pointwise and packing, M off
// the group and tile heights, several row blocks.
TEST(ConvGemmLowering, GroupedWeightsOnEveryTile) {
  struct Case {
    Dims x;
    int64_t m, k;
    Attrs window;
  };
  std::vector<Case> cases = {
      {{1, 16, 7, 7}, 40, 16, {}},
      {{2, 24, 5, 9}, 13, 24, {}},
      {{1, 64, 14, 14}, 100, 64, {}},
      {{1, 8, 12, 13}, 30, 72, window({3, 3}, {1, 1, 1, 1}, {2, 2}, {1, 1})},
      // A strided 1x1 window (a downsample), as conv_to_gemm groups it.
      {{1, 32, 15, 15}, 50, 32, window({1, 1}, {0, 0, 0, 0}, {2, 2}, {1, 1})},
  };
  uint64_t seed = 280;
  for (const Case& c : cases) {
    Attrs attrs = c.window;
    attrs["out_channels"] = c.m;
    Dims spatial = {c.x[2], c.x[3]};
    if (!c.window.empty()) {
      attrs["panel"] = int64_t{96};
      const Dims& kernel = std::get<Dims>(c.window.at("kernel_shape"));
      const Dims& pads = std::get<Dims>(c.window.at("pads"));
      spatial = {(c.x[2] + pads[0] + pads[2] - kernel[0]) / 2 + 1,
                 (c.x[3] + pads[1] + pads[3] - kernel[1]) / 2 + 1};
    } else {
      attrs["panel"] = int64_t{0};
    }
    attrs["output_spatial"] = spatial;
    std::vector<TensorType> inputs = {f32(c.x), f32({(c.m + 23) / 24, c.k, 24}), f32({c.m})};
    auto g = testing::makeSingleNodeGraph("nanoc.ConvGemm", inputs, attrs);
    testing::expectMatchesOnEveryTile(*g->node, seed++, testing::describe("nanoc.ConvGemm", inputs),
                                      {1});
  }
  // The grouped W's shape is checked.
  Attrs attrs = {
      {"panel", int64_t{0}}, {"output_spatial", Dims{7, 7}}, {"out_channels", int64_t{40}}};
  EXPECT_THROW(
      testing::makeSingleNodeGraph("nanoc.ConvGemm", {f32({1, 16, 7, 7}), f32({1, 16, 24})}, attrs),
      CompileError);
  EXPECT_THROW(
      testing::makeSingleNodeGraph("nanoc.ConvGemm", {f32({1, 16, 7, 7}), f32({2, 16, 12})}, attrs),
      CompileError);
}

// W grouped by each divisor of 24 rows (convToGemm's row_group: the
// program's tiles' rows): matches on each tile whose rows divide the group,
// a clear error on the others; a group that does not divide 24 is refused.
TEST(ConvGemmLowering, WeightRowGroupsOfTheTilesRows) {
  struct Case {
    Dims x;
    int64_t m, k;
    Attrs window;  // stride 2 where present
  };
  const std::vector<Case> cases = {
      {{1, 16, 7, 7}, 40, 16, {}},
      {{1, 32, 15, 15}, 50, 32, window({1, 1}, {0, 0, 0, 0}, {2, 2}, {1, 1})},
      {{1, 8, 12, 13}, 30, 72, window({3, 3}, {1, 1, 1, 1}, {2, 2}, {1, 1})},
  };
  uint64_t seed = 290;
  for (const int64_t group : {4, 6, 8, 12}) {
    for (const Case& c : cases) {
      Attrs attrs = c.window;
      attrs["out_channels"] = c.m;
      attrs["panel"] = c.window.empty() ? int64_t{0} : int64_t{96};
      attrs["output_spatial"] =
          c.window.empty() ? Dims{c.x[2], c.x[3]} : Dims{(c.x[2] + 1) / 2, (c.x[3] + 1) / 2};
      const std::vector<TensorType> inputs = {
          f32(c.x), f32({(c.m + group - 1) / group, c.k, group}), f32({c.m})};
      const std::string what = testing::describe("nanoc.ConvGemm", inputs);
      SCOPED_TRACE(what);
      auto g = testing::makeSingleNodeGraph("nanoc.ConvGemm", inputs, attrs);
      std::mt19937_64 rng(seed++);
      std::vector<AlignedBuffer> data;
      for (const TensorType& type : inputs) {
        data.emplace_back(type.bytes());
        testing::fillRandom(data.back(), type, rng);
      }
      g->node->inputs[1]->data = std::make_shared<std::vector<uint8_t>>(
          data[1].data(), data[1].data() + inputs[1].bytes());
      for (const testing::KernelAttributes& target : tileTargets()) {
        const int64_t rows = testing::tileOf(target).rows;
        SCOPED_TRACE("tile rows " + std::to_string(rows));
        if (group % rows == 0)
          testing::expectLoweringMatchesReference(*g->node, data, what, target);
        else
          EXPECT_THROW(testing::compileKernel(*g->node, target), CompileError);
      }
    }
  }
  Attrs attrs = {
      {"panel", int64_t{0}}, {"output_spatial", Dims{7, 7}}, {"out_channels", int64_t{40}}};
  for (const int64_t group : {5, 48})
    EXPECT_THROW(testing::makeSingleNodeGraph(
                     "nanoc.ConvGemm",
                     {f32({1, 16, 7, 7}), f32({(40 + group - 1) / group, 16, group})}, attrs),
                 CompileError)
        << group;
}

// A pointwise ConvGemm with a channel scale (input 4: W's columns scaled per
// image into the scratch, a task's rows at a time), on each tile: several row
// blocks with a partial last group, two images (a scale each), and the
// optional inputs before it absent or present.
TEST(ConvGemmLowering, ChannelScaleOnEveryTile) {
  struct Case {
    Dims x;
    int64_t m;
    bool bias, residual;
  };
  const std::vector<Case> cases = {
      {{1, 32, 7, 7}, 100, true, false},  // several row blocks, the last partial
      {{2, 24, 5, 9}, 13, false, true},
      {{1, 16, 12, 12}, 40, true, true},
  };
  uint64_t seed = 300;
  for (const Case& c : cases) {
    Attrs attrs = {
        {"panel", int64_t{0}}, {"output_spatial", Dims{c.x[2], c.x[3]}}, {"out_channels", c.m}};
    const Dims y = {c.x[0], c.m, c.x[2], c.x[3]};
    std::vector<TensorType> inputs = {f32(c.x), f32({(c.m + 23) / 24, c.x[1], 24}), f32({c.m}),
                                      f32(y), f32({c.x[0], c.x[1], 1, 1})};
    auto g = testing::makeSingleNodeGraph("nanoc.ConvGemm", inputs, attrs);
    Node& node = *g->node;
    if (!c.bias) node.inputs[2] = nullptr;
    if (!c.residual) node.inputs[3] = nullptr;
    inferNode(node);
    ASSERT_TRUE(convGemmShape(node).has_scale);
    std::mt19937_64 rng(seed++);
    std::vector<AlignedBuffer> data;
    for (const Value* in : node.inputs) {
      data.emplace_back(in ? in->type.bytes() : 0);  // unused where absent
      if (in) testing::fillRandom(data.back(), in->type, rng);
    }
    node.inputs[1]->data = std::make_shared<std::vector<uint8_t>>(
        data[1].data(), data[1].data() + node.inputs[1]->type.bytes());
    const std::string what = testing::describe("nanoc.ConvGemm", inputs) + (c.bias ? " bias" : "") +
                             (c.residual ? " residual" : "");
    // The reference takes the inputs by position (null where absent), the
    // kernel its buffers without the absent ones.
    std::vector<const void*> ref_in;
    std::vector<void*> buffers;
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      ref_in.push_back(node.inputs[i] ? data[i].data() : nullptr);
      if (node.inputs[i]) buffers.push_back(data[i].data());
    }
    const TensorType& out = node.outputs[0]->type;
    AlignedBuffer want(out.bytes());
    findOp("nanoc.ConvGemm")->reference(node, ref_in, {want.data()});
    for (const auto& target : tileTargets()) {
      if (target.empty()) continue;  // ConvGemm runs on vector targets only
      SCOPED_TRACE("target-features " + target[1].second.substr(0, 40));
      testing::JitKernel kernel = testing::compileKernel(node, target);
      AlignedBuffer got(out.bytes());
      std::memset(got.data(), 0xff, got.size());
      std::vector<void*> args = buffers;
      args.push_back(got.data());
      testing::runKernel(kernel, args);
      testing::expectOutputMatches(out, got, want, what);
    }
  }
  // A scale of another shape, or on a packing ConvGemm, is refused.
  Attrs attrs = {
      {"panel", int64_t{0}}, {"output_spatial", Dims{7, 7}}, {"out_channels", int64_t{40}}};
  EXPECT_THROW(testing::makeSingleNodeGraph("nanoc.ConvGemm",
                                            {f32({1, 16, 7, 7}), f32({2, 16, 24}), f32({40}),
                                             f32({1, 40, 7, 7}), f32({1, 1, 1, 1})},
                                            attrs),
               CompileError);
  Attrs packing = window({3, 3}, {1, 1, 1, 1}, {1, 1}, {1, 1});
  packing["panel"] = int64_t{96};
  packing["output_spatial"] = Dims{7, 7};
  EXPECT_THROW(testing::makeSingleNodeGraph("nanoc.ConvGemm",
                                            {f32({1, 4, 7, 7}), f32({8, 4, 3, 3}), f32({8}),
                                             f32({1, 8, 7, 7}), f32({1, 4, 1, 1})},
                                            packing),
               CompileError);
}

// The transposed product (pixel_rows = 96, a multiple of every tile's
// columns): pixels as rows, read from X in place (unit stride, or a strided
// 1x1 window) or from Im2Col panels of 24 pixels; W in groups of 96 rows.
// Pixel counts off every tile height (49, 7, 25), one block of 130 rows and
// blocks of 96 past 256 (289), channels off the panel (40, 200), two images,
// on every tile (the
// tile transposed in chunks of its width: 12 rows in 16 lanes, 6 in 8, 8 in
// two chunks of 4, 4 scalar rows).
TEST(ConvGemmLowering, PixelRowsOnEveryTile) {
  struct Case {
    Dims b;  // X, or the Im2Col panels
    int64_t m, k;
    Dims spatial;
    Attrs window;  // a strided 1x1 window, or none
    bool bias;
  };
  std::vector<Case> cases = {
      {{1, 32, 7, 7}, 40, 32, {7, 7}, {}, true},
      {{2, 20, 1, 7}, 200, 20, {1, 7}, {}, false},
      {{1, 16, 13, 10}, 100, 16, {13, 10}, {}, true},
      {{1, 8, 17, 17}, 40, 8, {17, 17}, {}, false},
      {{1, 24, 14, 14}, 96, 24, {7, 7}, window({1, 1}, {0, 0, 0, 0}, {2, 2}, {1, 1}), true},
      {{2, 8, 9, 14}, 40, 8, {5, 5}, window({1, 1}, {0, 0, 0, 0}, {2, 3}, {1, 1}), false},
      // Im2Col panels of 24 pixels: 49 pixels of K = 72 (a 3x3 window of 8 channels).
      {{1, 3, 72, 24}, 50, 72, {7, 7}, {}, true},
      {{2, 2, 18, 24}, 97, 18, {5, 5}, {}, true},
  };
  uint64_t seed = 330;
  for (const Case& c : cases) {
    Attrs attrs = c.window;
    attrs["out_channels"] = c.m;
    attrs["pixel_rows"] = int64_t{96};
    attrs["output_spatial"] = c.spatial;
    const bool panels = c.window.empty() && c.b[2] == c.k && c.b[3] == 24;
    attrs["panel"] = panels || !c.window.empty() ? int64_t{24} : int64_t{0};
    std::vector<TensorType> inputs = {f32(c.b), f32({(c.m + 95) / 96, c.k, 96})};
    if (c.bias) inputs.push_back(f32({c.m}));
    auto g = testing::makeSingleNodeGraph("nanoc.ConvGemm", inputs, attrs);
    EXPECT_EQ(findLowering("nanoc.ConvGemm")->scratch_bytes(*g->node), 0u);
    testing::expectMatchesOnEveryTile(*g->node, seed++, testing::describe("nanoc.ConvGemm", inputs),
                                      {1});
  }
}

// What pixel_rows needs: out_channels, W in groups of pixel_rows rows, no
// channel scale, and a window only if it is 1x1 without padding.
TEST(ConvGemmLowering, PixelRowsRejectsWhatItCannotRead) {
  auto build = [](Attrs attrs, std::vector<TensorType> inputs) {
    return testing::makeSingleNodeGraph("nanoc.ConvGemm", inputs, attrs);
  };
  const Attrs ok = {{"panel", int64_t{0}},
                    {"output_spatial", Dims{7, 7}},
                    {"out_channels", int64_t{40}},
                    {"pixel_rows", int64_t{32}}};
  EXPECT_NO_THROW(build(ok, {f32({1, 16, 7, 7}), f32({2, 16, 32})}));
  // W grouped by 24, not by pixel_rows.
  EXPECT_THROW(build(ok, {f32({1, 16, 7, 7}), f32({2, 16, 24})}), CompileError);
  Attrs no_channels = ok;
  no_channels.erase("out_channels");
  EXPECT_THROW(build(no_channels, {f32({1, 16, 7, 7}), f32({40, 16, 1, 1})}), CompileError);
  Attrs zero = ok;
  zero["pixel_rows"] = int64_t{0};
  EXPECT_THROW(build(zero, {f32({1, 16, 7, 7}), f32({2, 16, 32})}), CompileError);
  Attrs win3 = ok;
  for (const auto& [key, value] : window({3, 3}, {1, 1, 1, 1}, {2, 2}, {1, 1})) win3[key] = value;
  win3["panel"] = int64_t{24};
  EXPECT_THROW(build(win3, {f32({1, 2, 14, 14}), f32({2, 18, 32})}), CompileError);
  Attrs padded = ok;
  for (const auto& [key, value] : window({1, 1}, {1, 1, 0, 0}, {2, 2}, {1, 1})) padded[key] = value;
  padded["panel"] = int64_t{24};
  padded["output_spatial"] = Dims{8, 7};
  EXPECT_THROW(build(padded, {f32({1, 16, 14, 14}), f32({2, 16, 32})}), CompileError);
  // A channel scale (input 4) needs the other orientation.
  auto g = build(ok, {f32({1, 16, 7, 7}), f32({2, 16, 32})});
  g->node->inputs.resize(kChannelScaleInput + 1, nullptr);
  g->node->inputs[kChannelScaleInput] = g->graph.addInput("s", f32({1, 16, 1, 1}));
  EXPECT_THROW(convGemmShape(*g->node), CompileError);
}

// ConvGemm on X, packing its panels into scratch a task at a time, on each
// tile: windows with padding, strides and dilations; enough rows and columns
// for several row and column blocks (a task's panels at an offset in X).
TEST(ConvGemmLowering, PacksItsPanelsOnEveryTile) {
  struct Case {
    Dims x, w;
    Attrs attrs;
    bool bias;
  };
  std::vector<Case> cases = {
      {{1, 3, 12, 13}, {8, 3, 3, 3}, window({3, 3}, {1, 1, 1, 1}, {1, 1}, {1, 1}), true},
      {{2, 5, 9, 9}, {13, 5, 3, 3}, window({3, 3}, {0, 1, 2, 1}, {2, 2}, {1, 2}), false},
      {{1, 4, 11, 10}, {7, 4, 3, 3}, window({3, 3}, {2, 2, 2, 2}, {1, 1}, {2, 2}), true},
      {{1, 6, 7, 7}, {10, 6, 1, 1}, window({1, 1}, {0, 0, 0, 0}, {2, 2}, {1, 1}), true},
      {{1, 3, 23, 23}, {16, 3, 7, 7}, window({7, 7}, {3, 3, 3, 3}, {2, 2}, {1, 1}), true},
      // K = 576 over 784 pixels: several column blocks.
      {{1, 64, 28, 28}, {24, 64, 3, 3}, window({3, 3}, {1, 1, 1, 1}, {1, 1}, {1, 1}), true},
      // K = 1152, 200 rows: a task's panels meet several row blocks of W.
      {{2, 128, 7, 7}, {200, 128, 3, 3}, window({3, 3}, {1, 1, 1, 1}, {1, 1}, {1, 1}), true},
  };
  uint64_t seed = 250;
  for (Case& c : cases) {
    std::vector<TensorType> inputs = {f32(c.x), f32(c.w)};
    if (c.bias) inputs.push_back(f32({c.w[0]}));
    Attrs attrs = c.attrs;
    attrs["panel"] = int64_t{96};
    Attrs conv = c.attrs;
    conv["group"] = int64_t{1};
    auto probe = testing::makeSingleNodeGraph("Conv", inputs, conv);
    const Dims& y = probe->node->outputs[0]->type.dims;
    attrs["output_spatial"] = Dims{y[2], y[3]};
    auto g = testing::makeSingleNodeGraph("nanoc.ConvGemm", inputs, attrs);
    ASSERT_GT(findLowering("nanoc.ConvGemm")->scratch_bytes(*g->node), 0u);
    testing::expectMatchesOnEveryTile(*g->node, seed++, testing::describe("nanoc.ConvGemm", inputs),
                                      {1});
  }
}

// The rewritten graph against the Conv's reference, run node by node on the
// host's widest tile, with W's rows (and a transposed product's Im2Col
// panels) in groups of 24 and of that tile's rows.
TEST(ConvToGemm, RewrittenConvMatchesConv) {
  uint64_t seed = 300;
  struct Case {
    Dims x, w;
    Attrs attrs;
  };
  std::vector<Case> cases = {
      {{1, 3, 12, 13}, {8, 3, 3, 3}, window({3, 3}, {1, 1, 1, 1}, {1, 1}, {1, 1})},
      {{2, 5, 9, 9}, {13, 5, 3, 3}, window({3, 3}, {0, 1, 2, 1}, {2, 2}, {1, 2})},
      {{1, 6, 7, 7}, {10, 6, 1, 1}, window({1, 1}, {0, 0, 0, 0}, {1, 1}, {1, 1})},
      {{1, 6, 7, 7}, {10, 6, 1, 1}, window({1, 1}, {0, 0, 0, 0}, {2, 2}, {1, 1})},
      // The transposed product (pixel_rows) on an Im2Col of 36 pixels, and
      // of 196 (14 x 14) in blocks of 96 pixels, or in one block where the
      // output channels make 4 panels.
      {{1, 8, 11, 11}, {96, 8, 3, 3}, window({3, 3}, {1, 1, 1, 1}, {2, 2}, {1, 1})},
      {{1, 8, 27, 27}, {96, 8, 3, 3}, window({3, 3}, {1, 1, 1, 1}, {2, 2}, {1, 1})},
      {{1, 8, 27, 27}, {128, 8, 3, 3}, window({3, 3}, {1, 1, 1, 1}, {2, 2}, {1, 1})},
  };
  const std::vector<testing::KernelAttributes> targets = tileTargets();
  const testing::KernelAttributes& widest = targets.back();
  for (const int64_t row_group : {kWeightRowGroup, testing::tileOf(widest).rows})
    for (Case& c : cases) {
      c.attrs["group"] = int64_t{1};
      std::vector<TensorType> inputs = {f32(c.x), f32(c.w), f32({c.w[0]})};
      SCOPED_TRACE(testing::describe("Conv", inputs) + " row group " + std::to_string(row_group));
      testing::ConvWithReference conv = testing::convWithReference(inputs, c.attrs, seed++);
      auto& g = conv.g;
      std::vector<AlignedBuffer>& data = conv.data;
      ASSERT_EQ(convToGemm(g->graph, 96, /*winograd=*/false, row_group), 1);
      // Node by node, in order, each kernel on the host's widest tile.
      std::map<const Value*, const AlignedBuffer*> buffers = {{g->graph.inputs[0], &data[0]},
                                                              {g->graph.inputs[1], &data[1]},
                                                              {g->graph.inputs[2], &data[2]}};
      std::vector<std::unique_ptr<AlignedBuffer>> owned;
      for (const auto& node : g->graph.nodes) {
        testing::JitKernel kernel = testing::compileKernel(*node, widest);
        std::vector<void*> args;
        // The rewrite's own constants (W grouped by rows) hold their data.
        for (const Value* in : node->inputs)
          args.push_back(buffers.count(in) ? static_cast<void*>(buffers.at(in)->data())
                                           : const_cast<uint8_t*>(in->data->data()));
        owned.push_back(std::make_unique<AlignedBuffer>(node->outputs[0]->type.bytes()));
        args.push_back(owned.back()->data());
        buffers[node->outputs[0]] = owned.back().get();
        testing::runKernel(kernel, args);
      }
      const Node& gemm = *g->graph.nodes.back();
      EXPECT_EQ(gemm.op, "nanoc.ConvGemm");
      // 1x1 windows, pointwise or strided: W grouped by rows; the transposed
      // product: W^T's panels, patches in panels of row_group pixels.
      if (gemm.has("pixel_rows")) {
        EXPECT_EQ(gemm.inputs[1]->type.dims[2], 96);
        EXPECT_EQ(gemm.i("panel"), row_group);
      } else if (c.w[2] == 1 && c.w[3] == 1) {
        EXPECT_EQ(gemm.i("out_channels"), c.w[0]);
        EXPECT_EQ(gemm.inputs[1]->type.dims[2], row_group);
      } else {
        EXPECT_FALSE(gemm.has("out_channels"));
      }
      testing::expectOutputMatches(g->node->outputs[0]->type, *owned.back(), conv.want,
                                   "rewritten Conv");
    }
}

}  // namespace
}  // namespace nanoc::cpu
