// nanoc.ConvNCHWc's depthwise and direct forms (lower_nchwc_conv.cc) against
// the op's reference on random inputs, on every register tile this machine
// runs, at blocks of 4, 8 and 16 lanes: 3x3 and 5x5 windows at strides 1 and
// 2, even and odd maps, asymmetric pads and pads wider than the window,
// maps narrower than the window, 1x1 up to 112-wide rows, two images; the
// stem's direct form with 3 channels (3x3 and 7x7 at stride 2), 1, 5 and
// many channels; bias or none, residual and fused activations; the shapes
// that take only run-time kernel rows (windows of more taps than unrolled)
// and the border loops (pads of many pixels); blocks of 1, 2 and 32 lanes;
// the direct form on a channel-blocked X (ResNet's dense convolutions: 16 to
// 64 channels, a partial last block, 3x3 at strides 1 and 2, 1x1 at stride
// 2, 5x5, pairs of output blocks and single ones), NaN in its padding lanes
// never reaching Y, and the shape rule's refusals.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "compiler/codegen/cpu/kernel_test_util.h"
#include "compiler/ops/epilogue.h"
#include "compiler/ops/nchwc.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc::cpu {
namespace {

using Attrs = std::map<std::string, Attr>;
using Dims = std::vector<int64_t>;

TensorType f32(Dims dims) { return {DType::F32, std::move(dims)}; }

struct Window {
  Dims kernel, strides, pads;  // pads: top, left, bottom, right
};

// A ConvNCHWc: `form` on a [N, C, H, W] image (blocked, for the depthwise
// form and a blocked direct one, in blocks of `block`) to `oc` channels (the
// depthwise form: C).
struct NchwcConv {
  std::string form;
  int64_t block;
  Dims image;  // N, C, H, W
  int64_t oc;
  Window window;
  bool bias = true;
  std::string activation;  // "": none
  bool residual = false;
  bool blocked = false;  // direct: X [N, ceil(C / b), H, W, b]
};

// X, W, bias (null where absent), residual (where present) and attributes.
struct Operands {
  std::vector<std::optional<TensorType>> inputs;
  Attrs attrs;
};

Operands operands(const NchwcConv& c) {
  const int64_t n = c.image[0], ch = c.image[1], h = c.image[2], w = c.image[3], b = c.block;
  const int64_t kh = c.window.kernel[0], kw = c.window.kernel[1];
  const Dims& p = c.window.pads;
  const bool direct = c.form == "direct";
  const int64_t ocb = channelBlocks(direct ? c.oc : ch, b);
  Operands o;
  const Dims blocked_x{n, channelBlocks(ch, b), h, w, b};
  o.inputs.push_back(f32(direct && !c.blocked ? Dims{n, ch, h, w} : blocked_x));
  o.inputs.push_back(f32(direct ? Dims{ocb, ch, kh, kw, b} : Dims{ocb, kh, kw, b}));
  if (c.bias)
    o.inputs.push_back(f32({ocb * b}));
  else
    o.inputs.push_back(std::nullopt);
  if (c.residual) {
    const int64_t oh = (h + p[0] + p[2] - kh) / c.window.strides[0] + 1;
    const int64_t ow = (w + p[1] + p[3] - kw) / c.window.strides[1] + 1;
    o.inputs.push_back(f32({n, ocb, oh, ow, b}));
  }
  while (!o.inputs.empty() && !o.inputs.back()) o.inputs.pop_back();
  o.attrs = {{"form", c.form},
             {"block", b},
             {"out_channels", direct ? c.oc : ch},
             {"kernel_shape", c.window.kernel},
             {"strides", c.window.strides},
             {"pads", c.window.pads}};
  if (!c.activation.empty()) {
    o.attrs["fused_activation"] = c.activation;
    if (c.activation == "Clip") {
      o.attrs["fused_alpha"] = -1.0;
      o.attrs["fused_beta"] = 1.5;
    }
  }
  return o;
}

std::string describe(const NchwcConv& c) {
  return "ConvNCHWc " + c.form + (c.blocked ? " blocked" : "") + " block " +
         std::to_string(c.block) + " image " + dimsStr(c.image) + " -> " + std::to_string(c.oc) +
         " kernel " + dimsStr(c.window.kernel) + " strides " + dimsStr(c.window.strides) +
         " pads " + dimsStr(c.window.pads) + (c.bias ? " bias" : " no bias") +
         (c.residual ? " residual" : "") + (c.activation.empty() ? "" : " " + c.activation);
}

// The node on random inputs, W constant (as from a model), on every tile.
void expectMatches(const NchwcConv& c, uint64_t seed) {
  Operands o = operands(c);
  auto g = testing::makeSingleNodeGraphWithAbsent("nanoc.ConvNCHWc", o.inputs, o.attrs);
  testing::expectMatchesOnEveryTile(*g->node, seed, describe(c), {1});
}

NchwcConv depthwise(int64_t block, Dims image, Window window, bool bias = true) {
  return {"depthwise", block, image, image[1], std::move(window), bias, "", false};
}

NchwcConv direct(int64_t block, Dims image, int64_t oc, Window window, bool bias = true) {
  return {"direct", block, std::move(image), oc, std::move(window), bias, "", false};
}

const Window k3s1p1{{3, 3}, {1, 1}, {1, 1, 1, 1}};
const Window k3s2p1{{3, 3}, {2, 2}, {1, 1, 1, 1}};
const Window k5s1p2{{5, 5}, {1, 1}, {2, 2, 2, 2}};
const Window k5s2p2{{5, 5}, {2, 2}, {2, 2, 2, 2}};

// Every window on every map, the block cycling through 4, 8 and 16 (C one
// and a half blocks: a padded last block), bias on every other case.
TEST(NchwcConvLowering, DepthwiseWindowsAndMaps) {
  const std::vector<Window> windows = {
      k3s1p1,
      k3s2p1,
      k5s1p2,
      k5s2p2,
      {{3, 3}, {2, 2}, {0, 0, 1, 1}},  // TF's SAME at stride 2: pad at the end only
      {{3, 3}, {1, 2}, {2, 0, 1, 2}},  // asymmetric pads, mixed strides
  };
  const std::vector<Dims> maps = {{1, 1}, {2, 2}, {7, 7}, {14, 14}, {15, 15}, {2, 112}};
  const int64_t blocks[] = {4, 8, 16};
  uint64_t seed = 1;
  for (const Dims& map : maps)
    for (const Window& w : windows) {
      if (map[0] + w.pads[0] + w.pads[2] < w.kernel[0] ||
          map[1] + w.pads[1] + w.pads[3] < w.kernel[1])
        continue;  // no output
      const int64_t block = blocks[seed % 3];
      expectMatches(depthwise(block, {1, block + block / 2, map[0], map[1]}, w, seed % 2 == 1),
                    seed);
      ++seed;
    }
}

// Each block on the common layers: two images, several channel blocks.
TEST(NchwcConvLowering, DepthwiseEveryBlock) {
  uint64_t seed = 100;
  for (int64_t block : {4, 8, 16}) {
    expectMatches(depthwise(block, {2, 2 * block, 14, 14}, k3s1p1), seed++);
    expectMatches(depthwise(block, {2, block, 15, 15}, k5s2p2, false), seed++);
  }
}

// Pads wider than the window (rows and columns of outputs that read only
// padding: the bias), pads of many columns (the border loops), a window
// larger than the map, 7x7, windows past the unrolled taps (every row's
// kernel rows at run time, some rows reading none), stride 3.
TEST(NchwcConvLowering, DepthwisePadsAndLargeWindows) {
  uint64_t seed = 200;
  expectMatches(depthwise(8, {1, 8, 4, 9}, {{3, 3}, {1, 1}, {4, 5, 3, 6}}), seed++);
  expectMatches(depthwise(4, {1, 4, 5, 6}, {{3, 3}, {1, 1}, {1, 10, 2, 11}}), seed++);
  expectMatches(depthwise(16, {1, 16, 5, 10}, {{3, 3}, {2, 2}, {4, 4, 4, 4}}, false), seed++);
  expectMatches(depthwise(8, {1, 8, 2, 3}, {{5, 5}, {1, 1}, {2, 2, 2, 2}}), seed++);
  expectMatches(depthwise(4, {1, 4, 16, 20}, {{7, 7}, {1, 1}, {3, 3, 3, 3}}), seed++);
  expectMatches(depthwise(8, {1, 8, 12, 13}, {{9, 9}, {1, 1}, {4, 4, 4, 4}}), seed++);
  expectMatches(depthwise(4, {1, 4, 6, 7}, {{7, 7}, {1, 1}, {12, 3, 12, 3}}), seed++);
  expectMatches(depthwise(16, {1, 16, 14, 29}, {{3, 3}, {3, 3}, {1, 1, 1, 1}}), seed++);
}

// Residual and activation in the store, with and without a bias, two images.
TEST(NchwcConvLowering, DepthwiseEpilogue) {
  uint64_t seed = 300;
  for (const char* act : {"Relu", "SiLU", "Clip"}) {
    NchwcConv c = depthwise(8, {2, 12, 9, 10}, k3s1p1);
    c.activation = act;
    c.residual = true;
    expectMatches(c, seed++);
  }
  NchwcConv c = depthwise(16, {1, 16, 7, 7}, k5s2p2, false);
  c.activation = "Relu";
  c.residual = true;
  expectMatches(c, seed++);
  c = depthwise(4, {1, 4, 6, 6}, k3s2p1);
  c.activation = "SiLU";
  expectMatches(c, seed++);
}

// The stem: 3 channels, 3x3 at stride 2 (even and odd maps), 7x7 at stride
// 2 (its taps loop over the channels), output channels not a whole number
// of blocks.
TEST(NchwcConvLowering, DirectStem) {
  uint64_t seed = 400;
  for (int64_t block : {4, 8, 16}) {
    expectMatches(direct(block, {1, 3, 16, 16}, 2 * block, k3s2p1), seed++);
    expectMatches(direct(block, {1, 3, 17, 17}, block + 3, k3s2p1, false), seed++);
  }
  expectMatches(direct(8, {2, 3, 15, 18}, 16, {{7, 7}, {2, 2}, {3, 3, 3, 3}}, false), seed++);
  expectMatches(direct(4, {1, 3, 6, 40}, 8, k3s2p1), seed++);
}

// Other channel counts and windows: 1 and 5 channels, many channels (a loop
// over them), 5x5, asymmetric pads, wide pads, a window past the unrolled
// taps, a map narrower than the window, two images.
TEST(NchwcConvLowering, DirectChannelsAndWindows) {
  uint64_t seed = 500;
  expectMatches(direct(8, {1, 1, 9, 11}, 8, k3s1p1), seed++);
  expectMatches(direct(16, {2, 1, 8, 8}, 16, k3s2p1, false), seed++);
  expectMatches(direct(4, {1, 5, 10, 9}, 6, k5s2p2), seed++);
  expectMatches(direct(8, {2, 5, 6, 7}, 16, k3s2p1, false), seed++);
  expectMatches(direct(16, {1, 20, 7, 9}, 16, k3s1p1), seed++);
  expectMatches(direct(4, {1, 2, 6, 7}, 4, {{3, 3}, {1, 2}, {0, 2, 1, 0}}), seed++);
  expectMatches(direct(8, {1, 2, 5, 5}, 8, {{3, 3}, {1, 1}, {1, 10, 1, 9}}), seed++);
  expectMatches(direct(4, {1, 2, 11, 12}, 4, {{9, 9}, {1, 1}, {4, 4, 4, 4}}), seed++);
  expectMatches(direct(16, {1, 3, 2, 2}, 16, k3s1p1), seed++);
  expectMatches(direct(8, {1, 3, 1, 1}, 8, k3s2p1), seed++);
}

TEST(NchwcConvLowering, DirectEpilogue) {
  uint64_t seed = 600;
  const std::pair<int64_t, const char*> cases[] = {{16, "Relu"}, {8, "SiLU"}, {4, "Clip"}};
  for (const auto& [block, act] : cases) {
    NchwcConv c = direct(block, {1, 3, 9, 11}, 2 * block, k3s2p1);
    c.activation = act;
    c.residual = true;
    expectMatches(c, seed++);
  }
  NchwcConv c = direct(8, {2, 3, 16, 16}, 12, k3s2p1, false);
  c.activation = "Relu";
  c.residual = true;
  expectMatches(c, seed++);
  c = direct(4, {1, 5, 8, 8}, 4, k3s1p1);
  c.activation = "Clip";
  expectMatches(c, seed++);
}

// Blocks other than the targets' vector widths (any power of two is valid):
// one lane (plain floats), 2 and 32.
TEST(NchwcConvLowering, OtherBlocks) {
  uint64_t seed = 700;
  for (int64_t block : {1, 2, 32}) {
    expectMatches(depthwise(block, {1, block, 6, 9}, k3s1p1), seed++);
    expectMatches(direct(block, {1, 3, 7, 8}, block, k3s2p1, false), seed++);
  }
}

NchwcConv directBlocked(int64_t block, Dims image, int64_t oc, Window window, bool bias = true) {
  NchwcConv c = direct(block, std::move(image), oc, std::move(window), bias);
  c.blocked = true;
  return c;
}

const Window k1s2p0{{1, 1}, {2, 2}, {0, 0, 0, 0}};

// A channel-blocked X (ResNet's 3x3 convolutions): 16, 24 (a partial last
// block) and 64 channels at each block, 3x3 at strides 1 and 2 on 7 x 7,
// 14 x 14 and 2 x 56 maps; output blocks that pair up (a task's two blocks
// together) and an odd number of them (one a task).
TEST(NchwcConvLowering, DirectBlockedChannelsAndMaps) {
  uint64_t seed = 800;
  const int64_t blocks[] = {4, 8, 16};
  const Dims maps[] = {{7, 7}, {14, 14}, {2, 56}};
  const int64_t channels[] = {16, 24, 64};
  for (size_t m = 0; m < 3; ++m)
    for (size_t j = 0; j < 3; ++j) {
      const Dims& map = maps[m];
      const int64_t ch = channels[j], block = blocks[(m + j) % 3];
      const int64_t oc = seed % 2 ? 2 * block : 3 * block - 2;
      expectMatches(directBlocked(block, {1, ch, map[0], map[1]}, oc,
                                  seed % 4 < 2 ? k3s1p1 : k3s2p1, seed % 3 != 1),
                    seed);
      ++seed;
    }
}

// ResNet's downsample (1x1 at stride 2), 5x5 with pads of 2, two images,
// each block; a residual and Relu in the store.
TEST(NchwcConvLowering, DirectBlockedWindowsAndEpilogue) {
  uint64_t seed = 900;
  for (int64_t block : {4, 8, 16}) {
    expectMatches(directBlocked(block, {2, 2 * block, 14, 14}, 4 * block, k1s2p0), seed++);
    expectMatches(directBlocked(block, {1, block + 3, 9, 11}, 2 * block, k5s1p2, false), seed++);
    NchwcConv c = directBlocked(block, {2, 24, 7, 7}, 2 * block, k3s1p1);
    c.activation = "Relu";
    c.residual = true;
    expectMatches(c, seed++);
  }
  expectMatches(directBlocked(16, {1, 64, 56, 56}, 32, k3s2p1, false), seed++);
}

// X larger than half of L2 (told 16 KiB here): the tasks go in chunks of
// rows, the output blocks inside each chunk. Chunks of one row and of
// several, two images, a plain X (the stem) and a blocked one, a map whose
// rows have no divisor near the budget (13: chunks of one row), and a
// target with no L2 (blocks outer).
TEST(NchwcConvLowering, DirectRowChunksWhereXOutgrowsL2) {
  uint64_t seed = 950;
  const testing::KernelAttributes l2 = {{kL2CacheAttribute, "16384"}};
  for (int64_t block : {4, 8, 16}) {
    const auto check = [&](NchwcConv c, const testing::KernelAttributes& cache) {
      Operands o = operands(c);
      auto g = testing::makeSingleNodeGraphWithAbsent("nanoc.ConvNCHWc", o.inputs, o.attrs);
      testing::expectMatchesOnEveryTile(*g->node, seed++, describe(c) + " L2 " + cache[0].second,
                                        {1}, cache);
    };
    check(directBlocked(block, {2, 2 * block, 24, 24}, 4 * block, k3s2p1), l2);
    check(directBlocked(block, {1, 3 * block, 26, 9}, 2 * block, k1s2p0, false), l2);
    check(directBlocked(block, {2, 24, 13, 13}, 2 * block, k3s1p1), l2);
    check(direct(block, {2, 3, 40, 40}, 2 * block, {{7, 7}, {2, 2}, {3, 3, 3, 3}}), l2);
    check(directBlocked(block, {1, 2 * block, 16, 16}, 2 * block, k3s2p1),
          {{kL2CacheAttribute, "0"}});
  }
}

// Weights past half of L2 (told 16 KiB) with at least a line per output row
// and channel: each row prefetches a share of the next blocks' weights
// (the last blocks their own). Paired blocks, an odd number of blocks (one a
// task), two images, 7 x 7 and 4 x 4 outputs, edge rows.
TEST(NchwcConvLowering, DirectPrefetchesTheNextBlocksWeights) {
  uint64_t seed = 970;
  const testing::KernelAttributes l2 = {{kL2CacheAttribute, "16384"}};
  for (int64_t block : {4, 8, 16}) {
    for (const NchwcConv& c : {directBlocked(block, {2, 4 * block, 14, 14}, 4 * block, k3s2p1),
                               directBlocked(block, {1, 6 * block, 8, 8}, 3 * block, k3s2p1, false),
                               directBlocked(block, {1, 8 * block, 7, 7}, 2 * block, k3s1p1)}) {
      Operands o = operands(c);
      auto g = testing::makeSingleNodeGraphWithAbsent("nanoc.ConvNCHWc", o.inputs, o.attrs);
      testing::expectMatchesOnEveryTile(*g->node, seed++, describe(c) + " L2 16 KiB", {1}, l2);
    }
  }
}

// Given the next kernel's weights (kNextWeightsAttribute), the last blocks
// prefetch those instead of their own: the kernel takes one more buffer
// after its inputs (NaN here: only prefetched), still matches, and selects
// it as the prefetches' base; a kernel told none takes its usual buffers.
TEST(NchwcConvLowering, DirectPrefetchesTheNextKernelsWeights) {
  uint64_t seed = 990;
  for (int64_t block : {8, 16}) {
    const NchwcConv c = directBlocked(block, {1, 8 * block, 7, 7}, 4 * block, k3s1p1);
    Operands o = operands(c);
    auto g = testing::makeSingleNodeGraphWithAbsent("nanoc.ConvNCHWc", o.inputs, o.attrs);
    for (const char* bytes : {"4096", "1048576"}) {
      const testing::KernelAttributes attrs = {{kL2CacheAttribute, "16384"},
                                               {kNextWeightsAttribute, bytes}};
      testing::expectMatchesOnEveryTile(*g->node, seed++, describe(c) + " next weights " + bytes,
                                        {1}, attrs);
      llvm::LLVMContext ctx;
      auto module = testing::buildKernelModule(*g->node, ctx, "k", attrs);
      std::string ir;
      llvm::raw_string_ostream os(ir);
      module->print(os, nullptr);
      EXPECT_NE(ir.find("ptr %next_weights, ptr"), std::string::npos) << describe(c);
    }
  }
}

// NaN in the padding lanes of X's last block (lanes C .. ICb * b - 1)
// reaches no result: the kernel, like the reference, reads only lanes < C.
TEST(NchwcConvLowering, DirectBlockedPaddingLanesNeverRead) {
  uint64_t seed = 1000;
  for (const auto& [block, ch] : {std::pair<int64_t, int64_t>{16, 24}, {8, 5}, {4, 30}}) {
    NchwcConv c = directBlocked(block, {2, ch, 9, 10}, 2 * block, k3s1p1);
    c.residual = true;
    c.activation = "Relu";
    Operands o = operands(c);
    std::vector<TensorType> types;
    for (const auto& in : o.inputs) types.push_back(*in);
    auto g = testing::makeSingleNodeGraph("nanoc.ConvNCHWc", types, o.attrs);
    Node& node = *g->node;
    const std::string what = describe(c) + " NaN padding lanes";
    std::mt19937_64 rng(seed++);
    std::vector<testing::AlignedBuffer> data;
    for (const TensorType& type : types) {
      data.emplace_back(type.bytes());
      testing::fillRandom(data.back(), type, rng);
    }
    const Dims& x = types[0].dims;  // N, ICb, H, W, b
    auto* xp = reinterpret_cast<float*>(data[0].data());
    for (int64_t n = 0; n < x[0]; ++n)
      for (int64_t p = 0; p < x[2] * x[3]; ++p)
        for (int64_t l = ch - (x[1] - 1) * block; l < block; ++l)
          xp[((n * x[1] + x[1] - 1) * x[2] * x[3] + p) * block + l] = std::nanf("");
    node.inputs[1]->data =
        std::make_shared<std::vector<uint8_t>>(data[1].data(), data[1].data() + types[1].bytes());
    for (const testing::KernelAttributes& target : testing::tileTargets()) {
      SCOPED_TRACE("target-features " + (target.empty() ? "none" : target[1].second.substr(0, 40)));
      testing::expectLoweringMatchesReference(node, data, what, target);
    }
  }
}

// A blocked X whose blocks W's input channels do not end in, or of another
// lane count than the attribute `block`.
TEST(NchwcConvLowering, DirectBlockedShapeRefusals) {
  auto make = [](Dims x, Dims w) {
    return testing::makeSingleNodeGraph("nanoc.ConvNCHWc", {f32(std::move(x)), f32(std::move(w))},
                                        {{"form", std::string("direct")},
                                         {"block", int64_t{16}},
                                         {"out_channels", int64_t{32}},
                                         {"kernel_shape", Dims{3, 3}},
                                         {"strides", Dims{1, 1}},
                                         {"pads", Dims{1, 1, 1, 1}}});
  };
  EXPECT_NO_THROW(make({1, 2, 8, 8, 16}, {2, 24, 3, 3, 16}));
  EXPECT_NO_THROW(make({1, 2, 8, 8, 16}, {2, 32, 3, 3, 16}));
  EXPECT_THROW(make({1, 2, 8, 8, 16}, {2, 16, 3, 3, 16}), CompileError);  // 1 block, not 2
  EXPECT_THROW(make({1, 2, 8, 8, 16}, {2, 33, 3, 3, 16}), CompileError);  // 3 blocks
  EXPECT_THROW(make({1, 4, 8, 8, 8}, {2, 32, 3, 3, 16}), CompileError);   // 8 lanes, block 16
  EXPECT_THROW(make({1, 2, 8, 8, 16}, {2, 32, 3, 3}), CompileError);      // W of rank 4
  EXPECT_THROW(make({2, 8, 8}, {2, 32, 3, 3, 16}), CompileError);         // X of rank 3
  // The plain form still takes X's channels from X.
  EXPECT_THROW(make({1, 3, 8, 8}, {2, 4, 3, 3, 16}), CompileError);
}

}  // namespace
}  // namespace nanoc::cpu
