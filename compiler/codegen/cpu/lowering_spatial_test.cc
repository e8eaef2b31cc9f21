// The spatial lowerings against the ops' reference implementations on random
// inputs: Resize (every mode and coordinate transformation), 1-D and 3-D
// Conv and pooling, MaxPool on integer dtypes and with Indices, LpPool,
// ConvTranspose and GlobalMaxPool.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "compiler/codegen/cpu/kernel_test_util.h"

namespace nanoc::cpu {
namespace {

using testing::expectLoweringMatchesReference;
using testing::resizeAttrs;
using Attrs = std::map<std::string, Attr>;
using Dims = std::vector<int64_t>;

TensorType f32(Dims dims) { return {DType::F32, std::move(dims)}; }

// ---------------------------------------------------------------- Resize

TEST(ResizeLowering, EveryModeAndCoordinateTransformation) {
  uint64_t seed = 1;
  for (const char* mode : {"nearest", "linear", "cubic"})
    for (const char* ctm : {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel",
                            "align_corners", "asymmetric", "tf_half_pixel_for_nn"}) {
      SCOPED_TRACE(std::string(mode) + " " + ctm);
      // Up along H, down along W, N and C untouched.
      expectLoweringMatchesReference("Resize", {f32({2, 3, 5, 7})},
                                     resizeAttrs(mode, ctm, {2, 3, 12, 4}, {1, 1, 2.4, 0.6}),
                                     seed++);
    }
}

TEST(ResizeLowering, NearestModesAndOneAxis) {
  uint64_t seed = 50;
  for (const char* nearest : {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"}) {
    Attrs a = resizeAttrs("nearest", "asymmetric", {1, 2, 9}, {1, 1, 9.0 / 4});
    a["nearest_mode"] = std::string(nearest);
    expectLoweringMatchesReference("Resize", {f32({1, 2, 4})}, a, seed++);
  }
  // A rank-1 tensor: one row, the whole resize along the last axis.
  expectLoweringMatchesReference("Resize", {f32({6})},
                                 resizeAttrs("linear", "half_pixel", {13}, {13.0 / 6}), seed++);
}

TEST(ResizeLowering, NearestGathersAnyDtypeBitForBit) {
  uint64_t seed = 60;
  for (DType dtype : {DType::I8, DType::U8, DType::I64, DType::F16})
    expectLoweringMatchesReference(
        "Resize", {{dtype, {1, 2, 3, 5}}},
        resizeAttrs("nearest", "half_pixel", {1, 2, 7, 2}, {1, 1, 7.0 / 3, 0.4}), seed++);
}

TEST(ResizeLowering, AntialiasExcludeOutsideAndCubicCoefficient) {
  Attrs a = resizeAttrs("linear", "half_pixel", {1, 1, 3, 5}, {1, 1, 0.3, 0.45});
  a["antialias"] = int64_t{1};
  expectLoweringMatchesReference("Resize", {f32({1, 1, 10, 11})}, a, 70);
  a["mode"] = std::string("cubic");
  expectLoweringMatchesReference("Resize", {f32({1, 1, 10, 11})}, a, 71);
  a = resizeAttrs("cubic", "half_pixel", {1, 1, 9, 3}, {1, 1, 2.25, 0.75});
  a["exclude_outside"] = int64_t{1};
  a["cubic_coeff_a"] = -0.5;
  expectLoweringMatchesReference("Resize", {f32({1, 1, 4, 4})}, a, 72);
}

TEST(ResizeLowering, TfCropAndResizeExtrapolates) {
  Attrs a = resizeAttrs("linear", "tf_crop_and_resize", {1, 1, 6, 5}, {1, 1, 1.5, 1.25});
  a["roi"] = std::vector<double>{0, 0, -0.2, 0.4, 1, 1, 1.3, 0.9};
  a["extrapolation_value"] = 10.0;
  expectLoweringMatchesReference("Resize", {f32({1, 1, 4, 4})}, a, 80);
  a["mode"] = std::string("nearest");
  expectLoweringMatchesReference("Resize", {f32({1, 1, 4, 4})}, a, 81);
}

// ---------------------------------------------------------------- windows

Attrs window(Dims kernel, Dims pads, Dims strides, Dims dilations) {
  return {{"kernel_shape", kernel}, {"pads", pads}, {"strides", strides}, {"dilations", dilations}};
}

Attrs pool(Dims kernel, Dims pads, Dims strides, Dims dilations, int64_t ceil_mode) {
  Attrs a = window(std::move(kernel), std::move(pads), std::move(strides), std::move(dilations));
  a["ceil_mode"] = ceil_mode;
  return a;
}

Attrs conv(int64_t group, Dims kernel, Dims pads, Dims strides, Dims dilations) {
  Attrs a = window(std::move(kernel), std::move(pads), std::move(strides), std::move(dilations));
  a["group"] = group;
  return a;
}

TEST(ConvLowering, OneAndThreeSpatialDims) {
  expectLoweringMatchesReference("Conv", {f32({2, 3, 17}), f32({4, 3, 3}), f32({4})},
                                 conv(1, {3}, {1, 2}, {2}, {1}), 100);
  expectLoweringMatchesReference("Conv", {f32({1, 4, 15}), f32({6, 2, 4})},
                                 conv(2, {4}, {0, 0}, {1}, {2}), 101);
  expectLoweringMatchesReference("Conv", {f32({1, 2, 5, 6, 7}), f32({3, 2, 2, 3, 3}), f32({3})},
                                 conv(1, {2, 3, 3}, {1, 0, 1, 0, 1, 1}, {2, 1, 2}, {1, 2, 1}), 102);
  expectLoweringMatchesReference("Conv", {f32({2, 4, 4, 4, 4}), f32({4, 1, 3, 3, 3})},
                                 conv(4, {3, 3, 3}, {1, 1, 1, 1, 1, 1}, {1, 1, 1}, {1, 1, 1}), 103);
}

TEST(PoolLowering, OneAndThreeSpatialDims) {
  uint64_t seed = 200;
  for (int64_t ceil_mode : {0, 1}) {
    Attrs one = pool({3}, {1, 2}, {2}, {2}, ceil_mode);
    Attrs three = pool({2, 3, 2}, {1, 1, 0, 0, 2, 1}, {2, 2, 1}, {1, 1, 2}, ceil_mode);
    expectLoweringMatchesReference("MaxPool", {f32({2, 3, 19})}, one, seed++);
    expectLoweringMatchesReference("MaxPool", {f32({1, 2, 6, 7, 8})}, three, seed++);
    for (int64_t include_pad : {0, 1}) {
      one["count_include_pad"] = include_pad;
      three["count_include_pad"] = include_pad;
      expectLoweringMatchesReference("AveragePool", {f32({2, 3, 19})}, one, seed++);
      expectLoweringMatchesReference("AveragePool", {f32({1, 2, 6, 7, 8})}, three, seed++);
    }
    for (int64_t p : {1, 2, 3, 4, 5}) {
      one["p"] = p;
      three["p"] = p;
      expectLoweringMatchesReference("LpPool", {f32({2, 3, 19})}, one, seed++);
      expectLoweringMatchesReference("LpPool", {f32({1, 2, 6, 7, 8})}, three, seed++);
    }
  }
}

// 2-D f32 MaxPool's vector rows (emitMaxPoolRows) on every tile: strides 1
// and 2, pads (symmetric, asymmetric, past the window with ceil_mode),
// widths around the vector widths, and the fallbacks (dilation, stride 3).
TEST(MaxPoolLowering, VectorRowsOnEveryTile) {
  struct Case {
    Dims x;
    Attrs attrs;
  };
  std::vector<Case> cases = {
      {{1, 4, 109, 109}, pool({3, 3}, {0, 0, 0, 0}, {2, 2}, {1, 1}, 1)},
      {{1, 3, 112, 112}, pool({3, 3}, {1, 1, 1, 1}, {2, 2}, {1, 1}, 0)},
      {{2, 2, 9, 7}, pool({3, 3}, {1, 1, 1, 1}, {1, 1}, {1, 1}, 0)},
      {{1, 2, 17, 33}, pool({2, 2}, {0, 0, 0, 0}, {2, 2}, {1, 1}, 1)},
      {{1, 2, 8, 40}, pool({3, 5}, {0, 2, 1, 1}, {1, 2}, {1, 1}, 1)},
      {{1, 2, 5, 3}, pool({3, 3}, {2, 2, 2, 2}, {1, 1}, {1, 1}, 0)},
      {{1, 2, 12, 12}, pool({3, 3}, {1, 1, 1, 1}, {1, 1}, {2, 2}, 0)},
      {{1, 2, 12, 30}, pool({3, 3}, {1, 1, 1, 1}, {3, 3}, {1, 1}, 0)},
  };
  uint64_t seed = 450;
  for (const Case& c : cases) {
    std::vector<TensorType> inputs = {f32(c.x)};
    auto g = testing::makeSingleNodeGraph("MaxPool", inputs, c.attrs);
    testing::expectMatchesOnEveryTile(*g->node, seed++, testing::describe("MaxPool", inputs));
  }
}

TEST(MaxPoolLowering, IntegerAndHalfDtypesBitForBit) {
  // Random bytes: half-precision NaNs included, which never win.
  uint64_t seed = 300;
  for (DType dtype :
       {DType::I8, DType::U8, DType::I16, DType::U32, DType::I64, DType::F16, DType::BF16})
    expectLoweringMatchesReference("MaxPool", {{dtype, {1, 3, 7, 6}}},
                                   pool({3, 2}, {1, 1, 1, 0}, {2, 1}, {1, 1}, 1), seed++);
}

TEST(MaxPoolWithIndicesLowering, RowAndColumnMajorIndices) {
  uint64_t seed = 400;
  for (int64_t order : {0, 1}) {
    Attrs a = pool({3, 3}, {1, 1, 1, 1}, {2, 2}, {1, 1}, 1);
    a["storage_order"] = order;
    expectLoweringMatchesReference("MaxPoolWithIndices", {f32({2, 3, 9, 7})}, a, seed++);
    Attrs b = pool({2, 2, 2}, {0, 0, 0, 1, 1, 1}, {1, 2, 2}, {1, 1, 1}, 0);
    b["storage_order"] = order;
    expectLoweringMatchesReference("MaxPoolWithIndices", {f32({1, 2, 3, 4, 5})}, b, seed++);
  }
}

Attrs convTranspose(int64_t group, Dims kernel, Dims pads, Dims strides, Dims dilations,
                    Dims output_padding) {
  Attrs a =
      conv(group, std::move(kernel), std::move(pads), std::move(strides), std::move(dilations));
  a["output_padding"] = output_padding;
  return a;
}

TEST(ConvTransposeLowering, MatchesReference) {
  expectLoweringMatchesReference("ConvTranspose", {f32({1, 1, 3, 3}), f32({1, 2, 3, 3})},
                                 convTranspose(1, {3, 3}, {0, 0, 0, 0}, {1, 1}, {1, 1}, {0, 0}),
                                 500);
  expectLoweringMatchesReference("ConvTranspose", {f32({2, 4, 5, 4}), f32({4, 3, 3, 2}), f32({6})},
                                 convTranspose(2, {3, 2}, {1, 0, 2, 1}, {3, 2}, {1, 2}, {2, 1}),
                                 501);
  expectLoweringMatchesReference("ConvTranspose", {f32({1, 3, 7}), f32({3, 2, 3}), f32({2})},
                                 convTranspose(1, {3}, {1, 1}, {2}, {2}, {1}), 502);
  expectLoweringMatchesReference(
      "ConvTranspose", {f32({1, 2, 3, 4, 5}), f32({2, 2, 3, 3, 2})},
      convTranspose(1, {3, 3, 2}, {0, 1, 0, 1, 0, 1}, {2, 1, 3}, {1, 1, 1}, {1, 0, 2}), 503);
}

TEST(GlobalMaxPoolLowering, AnyRank) {
  expectLoweringMatchesReference("GlobalMaxPool", {f32({2, 3, 17})}, {}, 600);
  expectLoweringMatchesReference("GlobalMaxPool", {f32({1, 4, 3, 5, 6})}, {}, 601);
}

}  // namespace
}  // namespace nanoc::cpu
