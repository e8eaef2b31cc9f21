// The sampling lowerings against the ops' reference implementations on
// random inputs: GridSample in every mode and padding, with and without
// align_corners, over 1 to 3 spatial dims, grids reaching outside the image,
// and f64 / f16 operands; Col2Im; RoiAlign on ROIs partly outside the map; DeformConv; AffineGrid.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "compiler/codegen/cpu/kernel_test_util.h"
#include "compiler/ops/elementwise_table.h"

namespace nanoc::cpu {
namespace {

using testing::expectLoweringMatchesReference;
using Attrs = std::map<std::string, Attr>;
using Dims = std::vector<int64_t>;

TensorType f32(Dims dims) { return {DType::F32, std::move(dims)}; }

Attrs gridAttrs(const std::string& mode, const std::string& padding, bool align) {
  return {{"mode", mode}, {"padding_mode", padding}, {"align_corners", int64_t{align}}};
}

TEST(GridSampleLowering, EveryModePaddingAndAlignment2D) {
  uint64_t seed = 1;
  for (const char* mode : {"nearest", "linear", "cubic"})
    for (const char* padding : {"zeros", "border", "reflection"})
      for (bool align : {false, true}) {
        SCOPED_TRACE(std::string(mode) + " " + padding + (align ? " align" : ""));
        // Grid values in [-1.6, 1.6]: some points lie outside the image.
        expectLoweringMatchesReference("GridSample", {f32({2, 3, 5, 7}), f32({2, 4, 6, 2})},
                                       gridAttrs(mode, padding, align), seed++, -1.6f, 1.6f);
      }
}

TEST(GridSampleLowering, OneAndThreeSpatialDimsAndFarOutside) {
  uint64_t seed = 100;
  for (const char* mode : {"nearest", "linear", "cubic"})
    for (const char* padding : {"zeros", "border", "reflection"}) {
      SCOPED_TRACE(std::string(mode) + " " + padding);
      expectLoweringMatchesReference("GridSample", {f32({1, 2, 3, 4, 5}), f32({1, 2, 3, 4, 3})},
                                     gridAttrs(mode, padding, seed % 2 == 0), seed++, -1.3f, 1.3f);
      expectLoweringMatchesReference("GridSample", {f32({2, 3, 6}), f32({2, 9, 1})},
                                     gridAttrs(mode, padding, seed % 2 == 0), seed++, -1.3f, 1.3f);
      // Several periods of reflection away; sizes of 1.
      expectLoweringMatchesReference("GridSample", {f32({1, 2, 1, 3}), f32({1, 5, 4, 2})},
                                     gridAttrs(mode, padding, seed % 2 == 0), seed++, -9.0f, 9.0f);
    }
}

TEST(GridSampleLowering, F64AndF16) {
  expectLoweringMatchesReference("GridSample",
                                 {{DType::F64, {1, 2, 4, 4}}, {DType::F64, {1, 3, 5, 2}}},
                                 gridAttrs("cubic", "reflection", false), 7, -1.2f, 1.2f);
  expectLoweringMatchesReference("GridSample",
                                 {{DType::F16, {1, 2, 4, 4}}, {DType::F32, {1, 3, 5, 2}}},
                                 gridAttrs("linear", "border", true), 8, -1.2f, 1.2f);
}

TEST(GridSampleLowering, ManyChannelsSplitIntoTasks) {
  expectLoweringMatchesReference("GridSample", {f32({1, 64, 8, 8}), f32({1, 40, 40, 2})},
                                 gridAttrs("linear", "zeros", false), 9, -1.1f, 1.1f);
}

Attrs col2ImAttrs(Dims image, Dims block, Dims dilations, Dims strides, Dims pads) {
  return {{"image_shape", image},
          {"block_shape", block},
          {"dilations", dilations},
          {"strides", strides},
          {"pads", pads}};
}

TEST(Col2ImLowering, StridesDilationsPadsAndRanks) {
  // 2-D: blocks (5 + 1 + 2 - 3) / 2 + 1 = 3 and (6 + 0 + 1 - 2 * 1 - 1) / 1 + 1 = 5.
  expectLoweringMatchesReference("Col2Im", {f32({2, 3 * 6, 15})},
                                 col2ImAttrs({5, 6}, {3, 2}, {1, 2}, {2, 1}, {1, 0, 2, 1}), 1);
  // Plain 2-D, as ONNX's test_col2im.
  expectLoweringMatchesReference("Col2Im", {f32({1, 5, 5})},
                                 col2ImAttrs({5, 5}, {1, 5}, {1, 1}, {1, 1}, {0, 0, 0, 0}), 2);
  // 1-D and 3-D.
  expectLoweringMatchesReference("Col2Im", {f32({3, 2 * 3, 4})},
                                 col2ImAttrs({7}, {3}, {1}, {2}, {1, 1}), 3);
  expectLoweringMatchesReference(
      "Col2Im", {f32({1, 2 * 8, 2 * 3 * 2})},
      col2ImAttrs({3, 4, 3}, {2, 2, 2}, {1, 1, 2}, {1, 1, 1}, {0, 0, 1, 0, 0, 0}), 4);
  expectLoweringMatchesReference("Col2Im", {{DType::F64, {1, 4, 9}}},
                                 col2ImAttrs({4, 4}, {2, 2}, {1, 1}, {1, 1}, {0, 0, 0, 0}), 5);
}

// ---------------------------------------------------------------- RoiAlign

Attrs roiAttrs(const std::string& mode, bool half_pixel, int64_t oh, int64_t ow, int64_t ratio,
               double scale) {
  return {{"mode", mode},       {"half_pixel", int64_t{half_pixel}}, {"output_height", oh},
          {"output_width", ow}, {"sampling_ratio", ratio},           {"spatial_scale", scale}};
}

// ROIs as (x1, y1, x2, y2) inside (and a little outside) a 10 x 12 map.
void expectRoiAlign(const Attrs& attrs, DType dtype, uint64_t seed) {
  auto g = testing::makeSingleNodeGraph(
      "RoiAlign", {{dtype, {2, 3, 10, 12}}, {dtype, {5, 4}}, {DType::I64, {5}}}, attrs);
  std::mt19937_64 rng(seed);
  std::vector<testing::AlignedBuffer> data;
  for (size_t i = 0; i < 3; ++i) data.emplace_back(g->node->inputs[i]->type.bytes());
  testing::fillRandom(data[0], g->node->inputs[0]->type, rng);
  std::uniform_real_distribution<double> corner(-2.0, 8.0), extent(0.0, 9.0);
  for (int64_t r = 0; r < 5; ++r) {
    double x1 = corner(rng), y1 = corner(rng);
    double box[4] = {x1, y1, x1 + extent(rng), y1 + extent(rng)};
    for (int k = 0; k < 4; ++k)
      storeScalar(dtype, Scalar::ofFloat(box[k]), data[1].data(), r * 4 + k);
    reinterpret_cast<int64_t*>(data[2].data())[r] = r % 2;
  }
  testing::expectLoweringMatchesReference(*g->node, data, "RoiAlign");
}

TEST(RoiAlignLowering, AvgAndMaxWithFixedAndAdaptiveSampling) {
  uint64_t seed = 1;
  for (const char* mode : {"avg", "max"})
    for (bool half_pixel : {false, true})
      for (int64_t ratio : {0, 2}) {
        SCOPED_TRACE(std::string(mode) + (half_pixel ? " half_pixel" : "") + " ratio " +
                     std::to_string(ratio));
        expectRoiAlign(roiAttrs(mode, half_pixel, 3, 4, ratio, 1.0), DType::F32, seed++);
        expectRoiAlign(roiAttrs(mode, half_pixel, 2, 2, ratio, 0.5), DType::F64, seed++);
      }
}

// ---------------------------------------------------------------- DeformConv

Attrs deformAttrs(Dims dilations, Dims strides, Dims pads, int64_t group, int64_t offset_group) {
  return {{"dilations", dilations},
          {"strides", strides},
          {"pads", pads},
          {"group", group},
          {"offset_group", offset_group}};
}

TEST(DeformConvLowering, GroupsOffsetGroupsBiasAndMask) {
  // X [1, 4, 6, 7], W [6, 2, 3, 2] (group 2), offset_group 2,
  // with stride (2, 2), pads (1, 0, 1, 1), dilation (1, 2): output 3 x 3.
  const Attrs a = deformAttrs({1, 2}, {2, 2}, {1, 0, 1, 1}, 2, 2);
  Dims x = {1, 4, 6, 7}, w = {6, 2, 3, 2}, off = {1, 2 * 6 * 2, 3, 3}, mask = {1, 2 * 6, 3, 3};
  expectLoweringMatchesReference("DeformConv", {f32(x), f32(w), f32(off)}, a, 1);
  expectLoweringMatchesReference("DeformConv", {f32(x), f32(w), f32(off), f32({6})}, a, 2);
  expectLoweringMatchesReference("DeformConv", {f32(x), f32(w), f32(off), f32({6}), f32(mask)}, a,
                                 3);
  // Plain: 2 x 2 kernel, offsets up to 3 pixels, f64.
  expectLoweringMatchesReference(
      "DeformConv",
      {{DType::F64, {2, 3, 4, 4}}, {DType::F64, {2, 3, 2, 2}}, {DType::F64, {2, 8, 3, 3}}},
      deformAttrs({1, 1}, {1, 1}, {0, 0, 0, 0}, 1, 1), 4, -3.0f, 3.0f);
}

// ---------------------------------------------------------------- AffineGrid

TEST(AffineGridLowering, TwoAndThreeDimensionsBothAlignments) {
  for (int64_t align : {0, 1}) {
    expectLoweringMatchesReference("AffineGrid", {f32({2, 2, 3})},
                                   {{"size", Dims{2, 3, 5, 7}}, {"align_corners", align}},
                                   10 + static_cast<uint64_t>(align));
    expectLoweringMatchesReference("AffineGrid", {f32({1, 3, 4})},
                                   {{"size", Dims{1, 1, 3, 1, 6}}, {"align_corners", align}},
                                   20 + static_cast<uint64_t>(align));
  }
  expectLoweringMatchesReference("AffineGrid", {{DType::F64, {1, 2, 3}}},
                                 {{"size", Dims{1, 1, 64, 300}}, {"align_corners", int64_t{0}}},
                                 30);
}

}  // namespace
}  // namespace nanoc::cpu
