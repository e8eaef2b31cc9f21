// The spatial ops as a specification: Resize, N-D windows (Conv, MaxPool,
// MaxPoolWithIndices, AveragePool, LpPool), ConvTranspose and GlobalMaxPool;
// shape rules, errors and references on small examples computed by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numeric>

#include "compiler/ir/error.h"
#include "compiler/ir/op_registry.h"
#include "compiler/ops/resize.h"
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

std::vector<TensorType> infer(const std::string& op, const std::vector<TensorType>& inputs,
                              Attrs attrs) {
  OneNode one(op, inputs, std::move(attrs));
  inferNode(*one.node);
  std::vector<TensorType> types;
  for (const Value* v : one.node->outputs) types.push_back(v->type);
  return types;
}

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

// Runs the reference on inputs of any dtype (as raw bytes); returns output
// `index` as T.
template <typename T = float>
std::vector<T> reference(const std::string& op, const std::vector<TensorType>& types,
                         const std::vector<std::vector<uint8_t>>& data, Attrs attrs,
                         size_t index = 0) {
  OneNode one(op, types, std::move(attrs));
  inferNode(*one.node);
  std::vector<const void*> in;
  for (const auto& d : data) in.push_back(d.data());
  std::vector<std::vector<uint8_t>> out;
  std::vector<void*> out_ptrs;
  for (const Value* v : one.node->outputs) {
    out.emplace_back(v->type.bytes());
    out_ptrs.push_back(out.back().data());
  }
  findOp(op)->reference(*one.node, in, out_ptrs);
  std::vector<T> result(out[index].size() / sizeof(T));
  std::memcpy(result.data(), out[index].data(), out[index].size());
  return result;
}

template <typename T>
std::vector<uint8_t> bytesOf(const std::vector<T>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(T));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

std::vector<float> iota(int64_t n, float start = 1.0f) {
  std::vector<float> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), start);
  return v;
}

void expectNear(const std::vector<float>& got, const std::vector<float>& want, float tol = 1e-5f) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "at " << i;
}

// ---- Resize ----

Attrs resizeAttrs(const std::string& mode, const std::string& ctm, Dims sizes,
                  std::vector<double> scales, std::vector<double> roi = {}) {
  if (roi.empty()) {
    roi.assign(sizes.size(), 0.0);
    roi.resize(2 * sizes.size(), 1.0);
  }
  return {{"mode", mode},
          {"coordinate_transformation_mode", ctm},
          {"nearest_mode", std::string("round_prefer_floor")},
          {"cubic_coeff_a", -0.75},
          {"exclude_outside", int64_t{0}},
          {"extrapolation_value", 0.0},
          {"antialias", int64_t{0}},
          {"sizes", sizes},
          {"scales", scales},
          {"roi", roi}};
}

TEST(ShapeResize, OutputIsSizesWithTheInputDtype) {
  Attrs a = resizeAttrs("nearest", "asymmetric", {1, 2, 6, 9}, {1, 1, 3, 3});
  EXPECT_EQ(infer("Resize", {{DType::I8, {1, 2, 2, 3}}}, a)[0],
            (TensorType{DType::I8, {1, 2, 6, 9}}));
}

TEST(ShapeResize, RejectsBadAttributes) {
  Attrs a = resizeAttrs("linear", "half_pixel", {1, 4}, {1, 2});
  expectInferError("Resize", {{DType::I8, {1, 2}}}, a, "supports f32 and f64 only");
  a["mode"] = std::string("bicubic");
  expectInferError("Resize", {f32({1, 2})}, a, "mode 'bicubic'");
  a = resizeAttrs("linear", "half_pixel", {1, 4, 4}, {1, 2, 2});
  expectInferError("Resize", {f32({1, 2})}, a, "must have 2, 2 and 4 entries");
  a = resizeAttrs("linear", "sideways", {1, 4}, {1, 2});
  expectInferError("Resize", {f32({1, 2})}, a, "coordinate_transformation_mode 'sideways'");
  a = resizeAttrs("linear", "half_pixel", {1, 4}, {1, 0});
  expectInferError("Resize", {f32({1, 2})}, a, "positive");
}

TEST(ReferenceResize, NearestAsymmetricFloorRepeats) {
  Attrs a = resizeAttrs("nearest", "asymmetric", {1, 1, 4, 4}, {1, 1, 2, 2});
  a["nearest_mode"] = std::string("floor");
  expectNear(reference("Resize", {f32({1, 1, 2, 2})}, {bytesOf(iota(4))}, a),
             {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4});
}

TEST(ReferenceResize, LinearHalfPixelAndAlignCorners) {
  // [0, 4] -> 4 (half_pixel): sources -0.25, 0.25, 0.75, 1.25, clamped.
  expectNear(reference("Resize", {f32({2})}, {bytesOf(std::vector<float>{0, 4})},
                       resizeAttrs("linear", "half_pixel", {4}, {2})),
             {0, 1, 3, 4});
  // align_corners: the ends map onto the ends.
  expectNear(reference("Resize", {f32({2})}, {bytesOf(std::vector<float>{0, 4})},
                       resizeAttrs("linear", "align_corners", {3}, {1.5})),
             {0, 2, 4});
}

TEST(ReferenceResize, TfCropAndResizeExtrapolatesOutsideTheInput) {
  // roi [-0.5, 1.5] over [0, 4]: sources -0.5, 0.5, 1.5; the outer two are outside.
  Attrs a = resizeAttrs("linear", "tf_crop_and_resize", {3}, {1.5}, {-0.5, 1.5});
  a["extrapolation_value"] = 9.0;
  expectNear(reference("Resize", {f32({2})}, {bytesOf(std::vector<float>{0, 4})}, a), {9, 2, 9});
}

TEST(ReferenceResize, LinearAntialiasWidensTheFilterWhenDownscaling) {
  // Scale 0.5: four taps, weights (1 - |t - 0.5| / 2) / 2 = 1/8, 3/8, 3/8, 1/8.
  Attrs a = resizeAttrs("linear", "half_pixel", {2}, {0.5});
  a["antialias"] = int64_t{1};
  expectNear(reference("Resize", {f32({4})}, {bytesOf(std::vector<float>{0, 1, 2, 3})}, a),
             {0.625f, 2.375f});
}

TEST(ResizeAxis, CubicTapsSumToOneAndIdentityAxesCarryNoTables) {
  OneNode one("Resize", {f32({1, 4})}, resizeAttrs("cubic", "half_pixel", {1, 8}, {1, 2}));
  ResizeParams p = resizeParams(*one.node);
  EXPECT_TRUE(resizeAxis(*one.node, p, 0, 1).identity);
  ResizeAxis ax = resizeAxis(*one.node, p, 1, 4);
  ASSERT_EQ(ax.taps, 4);
  ASSERT_EQ(ax.weight.size(), 32u);
  for (int64_t o = 0; o < 8; ++o) {
    double sum = 0;
    for (int64_t t = 0; t < 4; ++t) sum += ax.weight[static_cast<size_t>(o * 4 + t)];
    EXPECT_NEAR(sum, 1.0, 1e-12) << o;
  }
}

// ---- N-D windows ----

Attrs window(Dims kernel, Dims pads, Dims strides, Dims dilations) {
  return {{"kernel_shape", kernel}, {"pads", pads}, {"strides", strides}, {"dilations", dilations}};
}

Attrs pool(Dims kernel, Dims pads, Dims strides, Dims dilations, int64_t ceil_mode = 0) {
  Attrs a = window(kernel, pads, strides, dilations);
  a["ceil_mode"] = ceil_mode;
  return a;
}

TEST(ShapePoolND, OneAndThreeSpatialDims) {
  EXPECT_EQ(infer("MaxPool", {f32({1, 3, 32})}, pool({2}, {0, 0}, {2}, {1}))[0], f32({1, 3, 16}));
  Attrs a = pool({5, 5, 5}, {0, 0, 0, 0, 0, 0}, {3, 3, 3}, {2, 2, 2}, 1);
  EXPECT_EQ(infer("MaxPool", {f32({1, 1, 32, 32, 32})}, a)[0], f32({1, 1, 9, 9, 9}));
  a["count_include_pad"] = int64_t{1};
  EXPECT_EQ(infer("AveragePool", {f32({1, 1, 32, 32, 32})}, a)[0], f32({1, 1, 9, 9, 9}));
  expectInferError("MaxPool", {f32({1, 1, 5})}, pool({2}, {0, 0, 0, 0}, {1}, {1}),
                   "'pads' must have 2 entries");
}

TEST(ReferenceMaxPool, OneDimensionalAndUint8) {
  expectNear(reference("MaxPool", {f32({1, 1, 5})}, {bytesOf(std::vector<float>{3, 1, 4, 1, 5})},
                       pool({2}, {0, 0}, {2}, {1})),
             {3, 4});
  std::vector<uint8_t> x = {10, 200, 30, 40};
  EXPECT_EQ(reference<uint8_t>("MaxPool", {{DType::U8, {1, 1, 2, 2}}}, {x},
                               pool({2, 2}, {1, 1, 0, 0}, {1, 1}, {1, 1})),
            (std::vector<uint8_t>{10, 200, 30, 200}));
}

TEST(ReferenceMaxPool, HalfPrecisionComparesValuesAndNaNNeverWins) {
  // f16 bits: NaN, -3, 1, 2 -> windows of two: -3 and 2.
  std::vector<uint16_t> x = {0x7e00, 0xc200, 0x3c00, 0x4000};
  EXPECT_EQ(reference<uint16_t>("MaxPool", {{DType::F16, {1, 1, 4}}}, {bytesOf(x)},
                                pool({2}, {0, 0}, {2}, {1})),
            (std::vector<uint16_t>{0xc200, 0x4000}));
  // bf16: a dilated window whose taps both fall in the padding is the lowest bf16.
  EXPECT_EQ(
      reference<uint16_t>("MaxPool", {{DType::BF16, {1, 1, 1}}},
                          {bytesOf(std::vector<uint16_t>{0xbf80})}, pool({2}, {1, 1}, {1}, {2})),
      (std::vector<uint16_t>{0xff7f}));
}

TEST(ReferenceMaxPool, ThreeDimensionalWindow) {
  // A 2x2x2 window over 2x2x3: the maximum of each column pair.
  expectNear(reference("MaxPool", {f32({1, 1, 2, 2, 3})}, {bytesOf(iota(12))},
                       pool({2, 2, 2}, {0, 0, 0, 0, 0, 0}, {1, 1, 1}, {1, 1, 1})),
             {11, 12});
}

TEST(ReferenceMaxPoolWithIndices, RowAndColumnMajorIndices) {
  // 2x3 plane, one 2x2 window at (0,0) and (0,1), stride 1: maxima 5 and 6 at
  // row-major 4 and 5; column-major (h + w * H) 3 and 5. Channel 1 adds 6.
  std::vector<float> x = {1, 2, 3, 4, 5, 6, 9, 8, 7, 0, 0, 0};
  Attrs a = pool({2, 2}, {0, 0, 0, 0}, {1, 1}, {1, 1});
  a["storage_order"] = int64_t{0};
  std::vector<TensorType> t = {f32({1, 2, 2, 3})};
  EXPECT_EQ(infer("MaxPoolWithIndices", t, a)[1], (TensorType{DType::I64, {1, 2, 1, 2}}));
  expectNear(reference("MaxPoolWithIndices", t, {bytesOf(x)}, a), {5, 6, 9, 8});
  EXPECT_EQ(reference<int64_t>("MaxPoolWithIndices", t, {bytesOf(x)}, a, 1),
            (std::vector<int64_t>{4, 5, 6, 7}));
  a["storage_order"] = int64_t{1};
  EXPECT_EQ(reference<int64_t>("MaxPoolWithIndices", t, {bytesOf(x)}, a, 1),
            (std::vector<int64_t>{3, 5, 6, 8}));
}

TEST(ReferenceAveragePool, ThreeDimensionalCountIncludePad) {
  // 1x1x2 input [2, 4], 1x1x2 window, pads 1 at the end of the last dim.
  Attrs a = pool({1, 1, 2}, {0, 0, 0, 0, 0, 1}, {1, 1, 1}, {1, 1, 1});
  a["count_include_pad"] = int64_t{1};
  expectNear(
      reference("AveragePool", {f32({1, 1, 1, 1, 2})}, {bytesOf(std::vector<float>{2, 4})}, a),
      {3, 2});
  a["count_include_pad"] = int64_t{0};
  expectNear(
      reference("AveragePool", {f32({1, 1, 1, 1, 2})}, {bytesOf(std::vector<float>{2, 4})}, a),
      {3, 4});
}

TEST(ReferenceLpPool, PNormOfTheInInputTaps) {
  Attrs a = pool({2}, {0, 1}, {1}, {1});
  a["p"] = int64_t{2};
  expectNear(reference("LpPool", {f32({1, 1, 2})}, {bytesOf(std::vector<float>{3, -4})}, a),
             {5, 4});
  a["p"] = int64_t{3};
  expectNear(reference("LpPool", {f32({1, 1, 2})}, {bytesOf(std::vector<float>{1, -2})}, a),
             {std::cbrt(9.0f), 2});
  a["p"] = int64_t{0};
  expectInferError("LpPool", {f32({1, 1, 2})}, a, "p must be in [1, 64]");
}

// ---- Conv and ConvTranspose ----

Attrs conv(int64_t group, Dims kernel, Dims pads, Dims strides, Dims dilations) {
  Attrs a = window(kernel, pads, strides, dilations);
  a["group"] = group;
  return a;
}

TEST(ReferenceConvND, OneAndThreeSpatialDims) {
  expectNear(reference("Conv", {f32({1, 1, 4}), f32({1, 1, 2})},
                       {bytesOf(iota(4)), bytesOf(std::vector<float>{1, -1})},
                       conv(1, {2}, {0, 0}, {1}, {1})),
             {-1, -1, -1});
  expectNear(reference("Conv", {f32({1, 1, 2, 2, 2}), f32({1, 1, 2, 2, 2})},
                       {bytesOf(iota(8)), bytesOf(std::vector<float>(8, 1))},
                       conv(1, {2, 2, 2}, {0, 0, 0, 0, 0, 0}, {1, 1, 1}, {1, 1, 1})),
             {36});
}

Attrs convTranspose(int64_t group, Dims kernel, Dims pads, Dims strides, Dims dilations,
                    Dims output_padding) {
  Attrs a = conv(group, kernel, pads, strides, dilations);
  a["output_padding"] = output_padding;
  return a;
}

TEST(ShapeConvTranspose, StridesPadsAndOutputPadding) {
  EXPECT_EQ(infer("ConvTranspose", {f32({1, 1, 3, 3}), f32({1, 2, 3, 3})},
                  convTranspose(1, {3, 3}, {0, 0, 0, 0}, {1, 1}, {1, 1}, {0, 0}))[0],
            f32({1, 2, 5, 5}));
  // H: 3 * 2 + 3 + 1 = 10, W: 2 * 2 + 3 + 1 = 8.
  EXPECT_EQ(infer("ConvTranspose", {f32({1, 1, 3, 3}), f32({1, 2, 3, 3})},
                  convTranspose(1, {3, 3}, {0, 0, 0, 0}, {3, 2}, {1, 1}, {1, 1}))[0],
            f32({1, 2, 10, 8}));
  expectInferError("ConvTranspose", {f32({1, 2, 3}), f32({3, 1, 3})},
                   convTranspose(1, {3}, {0, 0}, {1}, {1}, {0}), "input channels of X");
  expectInferError("ConvTranspose", {f32({1, 1, 1}), f32({1, 1, 1})},
                   convTranspose(1, {1}, {1, 1}, {1}, {1}, {0}), "would be empty");
}

TEST(ReferenceConvTranspose, ScattersThroughTheKernel) {
  std::vector<TensorType> t = {f32({1, 1, 3}), f32({1, 1, 3})};
  std::vector<std::vector<uint8_t>> d = {bytesOf(iota(3)), bytesOf(std::vector<float>(3, 1))};
  expectNear(reference("ConvTranspose", t, d, convTranspose(1, {3}, {0, 0}, {1}, {1}, {0})),
             {1, 3, 6, 5, 3});
  expectNear(reference("ConvTranspose", t, d, convTranspose(1, {3}, {0, 0}, {2}, {1}, {0})),
             {1, 1, 3, 2, 5, 3, 3});
  // Pads cut both ends; output_padding extends the end again.
  expectNear(reference("ConvTranspose", t, d, convTranspose(1, {3}, {1, 1}, {2}, {1}, {0})),
             {1, 3, 2, 5, 3});
  expectNear(reference("ConvTranspose", t, d, convTranspose(1, {3}, {1, 1}, {2}, {1}, {1})),
             {1, 3, 2, 5, 3, 3});
  // Past the last position an input reaches, the output is the bias (0).
  expectNear(reference("ConvTranspose", t, d, convTranspose(1, {3}, {0, 0}, {2}, {1}, {1})),
             {1, 1, 3, 2, 5, 3, 3, 0});
}

TEST(ReferenceConvTranspose, GroupsSeeOnlyTheirChannels) {
  expectNear(reference("ConvTranspose", {f32({1, 2, 2}), f32({2, 1, 1}), f32({2})},
                       {bytesOf(std::vector<float>{1, 2, 3, 4}), bytesOf(std::vector<float>{2, 3}),
                        bytesOf(std::vector<float>{0, 1})},
                       convTranspose(2, {1}, {0, 0}, {1}, {1}, {0})),
             {2, 4, 10, 13});
}

// ---- GlobalMaxPool ----

TEST(GlobalMaxPool, ShapeAndMaximum) {
  EXPECT_EQ(infer("GlobalMaxPool", {f32({2, 3, 4, 5, 6})}, {})[0], f32({2, 3, 1, 1, 1}));
  expectInferError("GlobalMaxPool", {f32({2, 3})}, {}, "rank >= 3");
  expectNear(reference("GlobalMaxPool", {f32({1, 2, 3})},
                       {bytesOf(std::vector<float>{1, -5, 3, -1, -2, -3})}, {}),
             {3, -1});
}

}  // namespace
}  // namespace nanoc
