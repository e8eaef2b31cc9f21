// The sampling ops as a specification: GridSample's shape rule, its errors,
// and its reference on small examples computed by hand (every mode and
// padding, align_corners, 1-D to 3-D).
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "compiler/ir/error.h"
#include "compiler/ir/op_registry.h"
#include "compiler/ops/grid_sample.h"
#include "compiler/passes/shape_inference.h"

namespace nanoc {
namespace {

using Dims = std::vector<int64_t>;
using Attrs = std::map<std::string, Attr>;

TensorType f32(Dims dims) { return {DType::F32, std::move(dims)}; }

struct OneNode {
  Graph graph;
  Node* node = nullptr;

  OneNode(const std::string& op, const std::vector<TensorType>& inputs, Attrs attrs) {
    std::vector<Value*> in;
    for (size_t i = 0; i < inputs.size(); ++i)
      in.push_back(graph.addInput("x" + std::to_string(i), inputs[i]));
    node = graph.addNode(op, "bad_node", in, static_cast<size_t>(findOp(op)->num_outputs));
    node->attrs = std::move(attrs);
  }
};

void expectInferError(const std::string& op, const std::vector<TensorType>& inputs, Attrs attrs,
                      const std::string& what) {
  OneNode one(op, inputs, std::move(attrs));
  try {
    inferNode(*one.node);
    ADD_FAILURE() << op << ": expected a CompileError containing '" << what << "'";
  } catch (const CompileError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("node 'bad_node' (" + op + ")"), std::string::npos) << msg;
    EXPECT_NE(msg.find(what), std::string::npos) << msg;
  }
}

// f32 inputs -> f32 output 0 by the op's reference.
std::vector<float> reference(const std::string& op, const std::vector<TensorType>& types,
                             const std::vector<std::vector<float>>& data, Attrs attrs) {
  OneNode one(op, types, std::move(attrs));
  inferNode(*one.node);
  std::vector<const void*> in;
  for (const auto& d : data) in.push_back(d.data());
  std::vector<float> out(static_cast<size_t>(one.node->outputs[0]->type.numel()));
  findOp(op)->reference(*one.node, in, {out.data()});
  return out;
}

Attrs gridAttrs(const std::string& mode, const std::string& padding, bool align) {
  return {{"mode", mode}, {"padding_mode", padding}, {"align_corners", int64_t{align}}};
}

void expectNear(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5f) << "at " << i;
}

TEST(ShapeGridSample, OutputIsNCThenTheGridsSpatialDims) {
  OneNode two("GridSample", {f32({2, 3, 4, 5}), f32({2, 6, 7, 2})},
              gridAttrs("linear", "zeros", false));
  inferNode(*two.node);
  EXPECT_EQ(two.node->outputs[0]->type.str(), "f32[2,3,6,7]");
  OneNode three("GridSample", {f32({1, 2, 3, 4, 5}), f32({1, 2, 3, 4, 3})},
                gridAttrs("nearest", "border", true));
  inferNode(*three.node);
  EXPECT_EQ(three.node->outputs[0]->type.str(), "f32[1,2,2,3,4]");
}

TEST(ShapeGridSample, RejectsBadAttributesAndShapes) {
  expectInferError("GridSample", {f32({1, 1, 2, 2}), f32({1, 2, 2, 2})},
                   gridAttrs("bilinear", "zeros", false), "mode 'bilinear'");
  expectInferError("GridSample", {f32({1, 1, 2, 2}), f32({1, 2, 2, 2})},
                   gridAttrs("linear", "wrap", false), "padding_mode 'wrap'");
  expectInferError("GridSample", {f32({1, 1, 2, 2}), f32({1, 2, 2, 3})},
                   gridAttrs("linear", "zeros", false), "grid must be [N, O1..O2, 2]");
  expectInferError("GridSample", {f32({2, 1, 2, 2}), f32({1, 2, 2, 2})},
                   gridAttrs("linear", "zeros", false), "grid must be");
  expectInferError("GridSample", {f32({1, 2}), f32({1, 2})}, gridAttrs("linear", "zeros", false),
                   "X must be [N, C, D1..Dr]");
  expectInferError("GridSample", {f32({1, 1, 0, 2}), f32({1, 2, 2, 2})},
                   gridAttrs("linear", "zeros", false), "empty spatial axis");
  expectInferError("GridSample", {{DType::I32, {1, 1, 2, 2}}, f32({1, 2, 2, 2})},
                   gridAttrs("nearest", "zeros", false), "must be f16, bf16, f32 or f64");
}

// X = [[1, 2], [3, 4]]; grid points are (x, y), x along W.
const std::vector<float> kX = {1, 2, 3, 4};

std::vector<float> sample2x2(const std::string& mode, const std::string& padding, bool align,
                             const std::vector<float>& points) {
  int64_t n = static_cast<int64_t>(points.size() / 2);
  return reference("GridSample", {f32({1, 1, 2, 2}), f32({1, 1, n, 2})}, {kX, points},
                   gridAttrs(mode, padding, align));
}

TEST(ReferenceGridSample, LinearAlignCornersHitsCornersAndInterpolates) {
  expectNear(sample2x2("linear", "zeros", true, {-1, -1, 1, 1, 0, 0, 1, -1, -1, 0.5f}),
             {1, 4, 2.5f, 2, 2.5f});
}

TEST(ReferenceGridSample, LinearPaddingModesAtTheHalfPixelBorder) {
  // Without align_corners, (-1, -1) is the outer corner of pixel (0, 0): half
  // a pixel outside on both axes.
  expectNear(sample2x2("linear", "zeros", false, {-1, -1}), {0.25f});
  expectNear(sample2x2("linear", "border", false, {-1, -1}), {1});
  expectNear(sample2x2("linear", "reflection", false, {-1, -1}), {1});
  // x = 2 is half a pixel past the border 1.5: reflected to 1; y = 0.5.
  expectNear(sample2x2("linear", "reflection", false, {1.5f, 0}), {3});
  // Border clamps the coordinate to 1 likewise.
  expectNear(sample2x2("linear", "border", false, {1.5f, 0}), {3});
  // Zeros: x = 2 reads column 2 (outside) only.
  expectNear(sample2x2("linear", "zeros", false, {1.5f, 0}), {0});
}

TEST(ReferenceGridSample, NearestRoundsHalfToEven) {
  // Without align_corners, 0 maps to 0.5 on both axes: rounds to 0.
  expectNear(sample2x2("nearest", "zeros", false, {0, 0}), {1});
  // 0.6 maps to 1.1 -> 1 on x; -0.6 to -0.1 -> 0 on y.
  expectNear(sample2x2("nearest", "zeros", false, {0.6f, -0.6f}), {2});
  // Far outside: zeros reads 0, border the nearest corner.
  expectNear(sample2x2("nearest", "zeros", true, {3, 3}), {0});
  expectNear(sample2x2("nearest", "border", true, {3, 3}), {4});
}

TEST(ReferenceGridSample, CubicIsExactOnPixelsAndSumsWeightsToOne) {
  expectNear(sample2x2("cubic", "border", true, {-1, -1, 1, -1, -1, 1, 1, 1}), {1, 2, 3, 4});
  // A constant image stays constant under border padding.
  std::vector<float> ones(9, 7.0f);
  auto y = reference("GridSample", {f32({1, 1, 3, 3}), f32({1, 1, 3, 2})},
                     {ones, {0.1f, 0.3f, -0.7f, 0.2f, 0.9f, -0.95f}},
                     gridAttrs("cubic", "border", false));
  expectNear(y, {7, 7, 7});
}

TEST(ReferenceGridSample, OneAndThreeSpatialDims) {
  // 1-D: X = [10, 20, 30], align_corners: g = 0 is index 1, g = 0.5 is 1.5.
  expectNear(reference("GridSample", {f32({1, 1, 3}), f32({1, 2, 1})}, {{10, 20, 30}, {0, 0.5f}},
                       gridAttrs("linear", "zeros", true)),
             {20, 25});
  // 3-D: the center of a 2x2x2 cube is the mean; grid is (x, y, z).
  std::vector<float> cube = {1, 2, 3, 4, 5, 6, 7, 8};
  expectNear(reference("GridSample", {f32({1, 1, 2, 2, 2}), f32({1, 1, 1, 2, 3})},
                       {cube, {0, 0, 0, 1, -1, -1}}, gridAttrs("linear", "zeros", true)),
             {4.5f, 2});
}

TEST(GridSampleRule, ReflectionOfIndicesAndCoordinates) {
  using grid_sample::reflect;
  using grid_sample::reflectIndex;
  // About -0.5 and 2.5 (d = 3): period 6.
  EXPECT_EQ(reflectIndex(-1, 3, false), 0);
  EXPECT_EQ(reflectIndex(3, 3, false), 2);
  EXPECT_EQ(reflectIndex(-4, 3, false), 2);
  EXPECT_EQ(reflectIndex(6, 3, false), 0);
  // About 0 and 2 (d = 3, align_corners): period 4.
  EXPECT_EQ(reflectIndex(-1, 3, true), 1);
  EXPECT_EQ(reflectIndex(3, 3, true), 1);
  EXPECT_EQ(reflectIndex(4, 3, true), 0);
  EXPECT_EQ(reflectIndex(5, 1, true), 0);
  EXPECT_FLOAT_EQ(reflect(-0.75f, -0.5f, 2.5f), -0.25f);
  EXPECT_FLOAT_EQ(reflect(3.0f, -0.5f, 2.5f), 2.0f);
  EXPECT_FLOAT_EQ(reflect(6.0f, -0.5f, 2.5f), -0.5f + 0.5f);
  EXPECT_FLOAT_EQ(grid_sample::roundEven(2.5f), 2.0f);
  EXPECT_FLOAT_EQ(grid_sample::roundEven(-0.5f), 0.0f);
  EXPECT_FLOAT_EQ(grid_sample::roundEven(1.5f), 2.0f);
}

// ---- Col2Im ----

Attrs col2ImAttrs(Dims image, Dims block, Dims dilations, Dims strides, Dims pads) {
  return {{"image_shape", image},
          {"block_shape", block},
          {"dilations", dilations},
          {"strides", strides},
          {"pads", pads}};
}

TEST(ShapeCol2Im, OutputIsNCThenTheImage) {
  OneNode one("Col2Im", {f32({2, 12, 6})},
              col2ImAttrs({3, 4}, {2, 2}, {1, 1}, {1, 1}, {0, 0, 0, 0}));
  inferNode(*one.node);
  EXPECT_EQ(one.node->outputs[0]->type.str(), "f32[2,3,3,4]");
}

TEST(ShapeCol2Im, RejectsInconsistentBlocks) {
  expectInferError("Col2Im", {f32({1, 5, 6})},
                   col2ImAttrs({3, 4}, {2, 2}, {1, 1}, {1, 1}, {0, 0, 0, 0}),
                   "not a multiple of the block size 4");
  expectInferError("Col2Im", {f32({1, 4, 5})},
                   col2ImAttrs({3, 4}, {2, 2}, {1, 1}, {1, 1}, {0, 0, 0, 0}),
                   "input dim 2 is 5, but the blocks [2,3] number 6");
  expectInferError("Col2Im", {f32({1, 4, 5})},
                   col2ImAttrs({3, 4}, {2, 2}, {1, 1}, {1}, {0, 0, 0, 0}), "strides");
  expectInferError("Col2Im", {f32({1, 4, 1})},
                   col2ImAttrs({1, 1}, {2, 2}, {1, 1}, {1, 1}, {0, 0, 0, 0}), "does not fit");
}

TEST(ReferenceCol2Im, OverlappingBlocksAddUp) {
  // K = 2 offsets over L = 3 positions of a 4-long image: Y[i] = x[0][i] + x[1][i - 1].
  expectNear(reference("Col2Im", {f32({1, 2, 3})}, {{1, 2, 3, 10, 20, 30}},
                       col2ImAttrs({4}, {2}, {1}, {1}, {0, 0})),
             {1, 12, 23, 30});
  // Stride 2 and a pad of 1: position l * 2 - 1 + k; the first and last
  // values fall into the padding.
  expectNear(reference("Col2Im", {f32({1, 2, 3})}, {{1, 2, 3, 10, 20, 30}},
                       col2ImAttrs({4}, {2}, {1}, {2}, {1, 1})),
             {10, 2, 20, 3});
  // Dilation 2: offsets 0 and 2, L = 2.
  expectNear(reference("Col2Im", {f32({1, 2, 2})}, {{1, 2, 10, 20}},
                       col2ImAttrs({4}, {2}, {2}, {1}, {0, 0})),
             {1, 2, 10, 20});
}

// ---- RoiAlign ----

Attrs roiAttrs(const std::string& mode, bool half_pixel, int64_t oh, int64_t ow, int64_t ratio) {
  return {{"mode", mode},       {"half_pixel", int64_t{half_pixel}}, {"output_height", oh},
          {"output_width", ow}, {"sampling_ratio", ratio},           {"spatial_scale", 1.0}};
}

TEST(ShapeRoiAlign, OutputIsRoisByChannelsByBins) {
  OneNode one("RoiAlign", {f32({2, 3, 8, 8}), f32({5, 4}), {DType::I64, {5}}},
              roiAttrs("avg", true, 4, 6, 0));
  inferNode(*one.node);
  EXPECT_EQ(one.node->outputs[0]->type.str(), "f32[5,3,4,6]");
  expectInferError("RoiAlign", {f32({2, 3, 8, 8}), f32({5, 4}), {DType::I32, {5}}},
                   roiAttrs("avg", true, 4, 6, 0), "batch_indices must be i64[5]");
  expectInferError("RoiAlign", {f32({2, 3, 8, 8}), f32({5, 4}), {DType::I64, {5}}},
                   roiAttrs("mean", true, 4, 6, 0), "mode 'mean'");
}

TEST(ReferenceRoiAlign, AveragesBilinearSamples) {
  // X = 0..15 on a 4 x 4 map is linear (v = 4y + x), so a bin's average is the
  // value at its center: the ROI (0, 0, 2, 2) with output_half_pixel as one
  // bin of 2 x 2 samples at (0.5, 0.5), (1.5, 0.5), ... centers on (1, 1) = 5.
  std::vector<float> x(16);
  for (size_t i = 0; i < 16; ++i) x[i] = static_cast<float>(i);
  OneNode one("RoiAlign", {f32({1, 1, 4, 4}), f32({1, 4}), {DType::I64, {1}}},
              roiAttrs("avg", false, 1, 1, 0));
  inferNode(*one.node);
  std::vector<float> rois = {0, 0, 2, 2}, y(1);
  int64_t batch = 0;
  findOp("RoiAlign")->reference(*one.node, {x.data(), rois.data(), &batch}, {y.data()});
  EXPECT_NEAR(y[0], 5.0f, 1e-5f);
  // half_pixel shifts the ROI by -0.5: the center (0.5, 0.5) reads 2.5.
  OneNode half("RoiAlign", {f32({1, 1, 4, 4}), f32({1, 4}), {DType::I64, {1}}},
               roiAttrs("avg", true, 1, 1, 0));
  inferNode(*half.node);
  findOp("RoiAlign")->reference(*half.node, {x.data(), rois.data(), &batch}, {y.data()});
  EXPECT_NEAR(y[0], 2.5f, 1e-5f);
}

// ---- DeformConv ----

Attrs deformAttrs() {
  return {{"dilations", Dims{1, 1}},
          {"strides", Dims{1, 1}},
          {"pads", Dims{0, 0, 0, 0}},
          {"group", int64_t{1}},
          {"offset_group", int64_t{1}}};
}

TEST(ShapeDeformConv, OutputFollowsTheOffsetAndChecksIt) {
  OneNode one("DeformConv", {f32({1, 2, 4, 4}), f32({3, 2, 2, 2}), f32({1, 8, 3, 3})},
              deformAttrs());
  inferNode(*one.node);
  EXPECT_EQ(one.node->outputs[0]->type.str(), "f32[1,3,3,3]");
  expectInferError("DeformConv", {f32({1, 2, 4, 4}), f32({3, 2, 2, 2}), f32({1, 8, 2, 2})},
                   deformAttrs(), "does not match the output");
  expectInferError("DeformConv", {f32({1, 2, 4, 4}), f32({3, 2, 2, 2}), f32({1, 6, 3, 3})},
                   deformAttrs(), "offset must be [1, 8, OH, OW]");
}

TEST(ReferenceDeformConv, ZeroOffsetsAreAConvolutionAndHalfPixelOffsetsInterpolate) {
  // 1x1 kernel of weight 2 on X = [[1, 2], [3, 4]]: offsets (0, 0) copy,
  // (0.5, 0.5) average the 2 x 2 neighbourhood (zeros outside).
  OneNode one("DeformConv", {f32({1, 1, 2, 2}), f32({1, 1, 1, 1}), f32({1, 2, 2, 2})},
              deformAttrs());
  inferNode(*one.node);
  std::vector<float> x = {1, 2, 3, 4}, w = {2}, y(4);
  std::vector<float> zero(8, 0.0f);
  findOp("DeformConv")->reference(*one.node, {x.data(), w.data(), zero.data()}, {y.data()});
  expectNear(y, {2, 4, 6, 8});
  std::vector<float> half(8, 0.5f);
  findOp("DeformConv")->reference(*one.node, {x.data(), w.data(), half.data()}, {y.data()});
  // (0.5, 0.5) from (0, 0): 2.5; from (0, 1): (2 + 4) / 4 = 1.5; from (1, 0):
  // (3 + 4) / 4; from (1, 1): 4 / 4.
  expectNear(y, {5, 3, 3.5f, 2});
}

// ---- AffineGrid ----

TEST(ReferenceAffineGrid, IdentityThetaGivesTheBaseGrid) {
  OneNode one("AffineGrid", {f32({1, 2, 3})},
              {{"size", Dims{1, 1, 2, 3}}, {"align_corners", int64_t{0}}});
  inferNode(*one.node);
  EXPECT_EQ(one.node->outputs[0]->type.str(), "f32[1,2,3,2]");
  std::vector<float> theta = {1, 0, 0, 0, 1, 0}, y(12);
  findOp("AffineGrid")->reference(*one.node, {theta.data()}, {y.data()});
  // x = -1 + (2 i + 1) / 3 along W, y = -1 + (2 j + 1) / 2 along H.
  expectNear(y, {-2.0f / 3, -0.5f, 0, -0.5f, 2.0f / 3, -0.5f,  //
                 -2.0f / 3, 0.5f, 0, 0.5f, 2.0f / 3, 0.5f});
  // align_corners, with a translation of (0.5, -1) and a size-1 axis.
  OneNode two("AffineGrid", {f32({1, 2, 3})},
              {{"size", Dims{1, 1, 1, 3}}, {"align_corners", int64_t{1}}});
  inferNode(*two.node);
  std::vector<float> shift = {1, 0, 0.5f, 0, 1, -1}, z(6);
  findOp("AffineGrid")->reference(*two.node, {shift.data()}, {z.data()});
  expectNear(z, {-0.5f, -2, 0.5f, -2, 1.5f, -2});
  expectInferError("AffineGrid", {f32({1, 2, 3})},
                   {{"size", Dims{1, 1, 2, 3, 4}}, {"align_corners", int64_t{0}}},
                   "theta must be [1, 3, 4]");
}

}  // namespace
}  // namespace nanoc
