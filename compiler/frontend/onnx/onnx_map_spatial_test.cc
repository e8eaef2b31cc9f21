// The spatial mappings per opset: Resize (10, 11, 13, 18, 19) and Upsample
// onto the canonical Resize, N-D windows with auto_pad, ConvTranspose's
// output_shape and auto_pad, LpPool, the global pools; and their errors.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

#include "compiler/frontend/onnx/onnx_importer.h"
#include "compiler/frontend/onnx/onnx_test_model.h"
#include "compiler/ir/error.h"

namespace nanoc::onnx_import {
namespace {

using testing::attr;
using testing::Dims;
using testing::Model;
using testing::onlyNode;
using testing::setFloats;
using testing::setInt;
using testing::setInts;
using testing::setString;

// ---- Resize and Upsample ----

TEST(MapResize, Opset19SizesOnAxesWithKeepAspectRatio) {
  Model m(19);
  m.input("x", {1, 1, 4, 6});
  m.ints("sizes", {8, 8});
  onnx::NodeProto* n = m.node("Resize", {"x", "", "", "sizes"}, {"y"});
  setInts(n, "axes", {2, -1});
  setString(n, "keep_aspect_ratio_policy", "not_larger");
  m.output("y");
  auto g = m.import();
  const Node& r = onlyNode(*g);
  ASSERT_EQ(r.op, "Resize");
  // not_larger: the smaller scale (8/6) on both axes, sizes rounded half up.
  EXPECT_EQ(r.ints("sizes"), (Dims{1, 1, 5, 8}));
  EXPECT_EQ(r.floats("scales"), (std::vector<double>{1, 1, 8.0 / 6, 8.0 / 6}));
  EXPECT_EQ(r.s("mode"), "nearest");
  EXPECT_EQ(r.s("coordinate_transformation_mode"), "half_pixel");
  EXPECT_EQ(r.s("nearest_mode"), "round_prefer_floor");
  EXPECT_EQ(r.f("cubic_coeff_a"), -0.75);
  EXPECT_EQ(r.i("antialias"), 0);
  EXPECT_EQ(g->outputs[0]->type.str(), "f32[1,1,5,8]");
}

TEST(MapResize, Opset11ScalesKeepTheirExactFloatValue) {
  Model m(11);
  m.input("x", {1, 1, 2, 5});
  m.floats("roi", {0}, {});
  m.floats("scales", {4}, {1, 1, 2, 0.6f});
  onnx::NodeProto* n = m.node("Resize", {"x", "roi", "scales"}, {"y"});
  setString(n, "mode", "cubic");
  attr(n, "cubic_coeff_a", onnx::AttributeProto::FLOAT)->set_f(-0.5f);
  m.output("y");
  auto g = m.import();
  const Node& r = onlyNode(*g);
  EXPECT_EQ(r.ints("sizes"), (Dims{1, 1, 4, 3}));  // floor(5 * 0.6f) = 3
  EXPECT_EQ(r.floats("scales")[3], static_cast<double>(0.6f));
  EXPECT_EQ(r.f("cubic_coeff_a"), -0.5);
  EXPECT_EQ(r.floats("roi"), (std::vector<double>{0, 0, 0, 0, 1, 1, 1, 1}));
}

TEST(MapResize, TfCropAndResizeReadsTheRoiOfItsAxes) {
  Model m(18);
  m.input("x", {1, 1, 4, 4});
  m.floats("roi", {4}, {0.25f, 0, 0.75f, 1});
  m.ints("sizes", {3, 3});
  onnx::NodeProto* n = m.node("Resize", {"x", "roi", "", "sizes"}, {"y"});
  setInts(n, "axes", {2, 3});
  setString(n, "coordinate_transformation_mode", "tf_crop_and_resize");
  attr(n, "extrapolation_value", onnx::AttributeProto::FLOAT)->set_f(5);
  m.output("y");
  auto g = m.import();
  const Node& r = onlyNode(*g);
  EXPECT_EQ(r.floats("roi"), (std::vector<double>{0, 0, 0.25, 0, 1, 1, 0.75, 1}));
  EXPECT_EQ(r.f("extrapolation_value"), 5.0);
}

TEST(MapResize, Opset10AndUpsampleAreAsymmetric) {
  for (int64_t opset : {7, 9, 10}) {
    Model m(opset);
    m.input("x", {1, 1, 2, 2});
    const char* op = opset == 10 ? "Resize" : "Upsample";
    onnx::NodeProto* n;
    if (opset == 7) {
      n = m.node(op, {"x"}, {"y"});
      setFloats(n, "scales", {1, 1, 2, 3});
    } else {
      m.floats("scales", {4}, {1, 1, 2, 3});
      n = m.node(op, {"x", "scales"}, {"y"});
    }
    m.output("y");
    auto g = m.import();
    const Node& r = onlyNode(*g);
    EXPECT_EQ(r.s("coordinate_transformation_mode"), "asymmetric") << opset;
    EXPECT_EQ(r.s("nearest_mode"), "floor") << opset;
    EXPECT_EQ(r.ints("sizes"), (Dims{1, 1, 4, 6})) << opset;
  }
}

TEST(MapResize, RejectsComputedScalesAndBothScalesAndSizes) {
  Model m(13);
  m.input("x", {1, 1, 2, 2});
  m.input("s", {4});
  m.node("Resize", {"x", "", "s"}, {"y"});
  m.output("y");
  EXPECT_NE(m.importError().find("computed at run time"), std::string::npos) << m.importError();

  Model both(13);
  both.input("x", {1, 1, 2, 2});
  both.floats("scales", {4}, {1, 1, 2, 2});
  both.ints("sizes", {1, 1, 4, 4});
  both.node("Resize", {"x", "", "scales", "sizes"}, {"y"});
  both.output("y");
  EXPECT_NE(both.importError().find("exactly one of scales and sizes"), std::string::npos);
}

// ---- windows ----

TEST(MapWindows, OneDimensionalPoolsAndLpPool) {
  Model m(18);
  m.input("x", {1, 3, 10});
  onnx::NodeProto* n = m.node("LpPool", {"x"}, {"y"});
  setInts(n, "kernel_shape", {3});
  setString(n, "auto_pad", "SAME_UPPER");
  setInts(n, "strides", {2});
  m.output("y");
  auto g = m.import();
  const Node& p = onlyNode(*g);
  EXPECT_EQ(p.op, "LpPool");
  EXPECT_EQ(p.i("p"), 2);  // the default
  EXPECT_EQ(p.i("ceil_mode"), 0);
  // out ceil(10 / 2) = 5; total pad (5 - 1) * 2 + 3 - 10 = 1, at the end.
  EXPECT_EQ(p.ints("pads"), (Dims{0, 1}));
  EXPECT_EQ(p.ints("dilations"), (Dims{1}));
}

TEST(MapWindows, ThreeDimensionalAveragePoolAndGlobalMaxPool) {
  Model m(19);
  m.input("x", {1, 2, 4, 4, 4});
  onnx::NodeProto* n = m.node("AveragePool", {"x"}, {"a"});
  setInts(n, "kernel_shape", {2, 2, 2});
  setInts(n, "pads", {0, 1, 0, 1, 0, 0});
  setInt(n, "count_include_pad", 1);
  m.node("GlobalMaxPool", {"a"}, {"y"});
  m.output("y");
  auto g = m.import();
  ASSERT_EQ(g->nodes.size(), 2u);
  EXPECT_EQ(g->nodes[0]->ints("pads"), (Dims{0, 1, 0, 1, 0, 0}));
  EXPECT_EQ(g->nodes[0]->i("count_include_pad"), 1);
  EXPECT_EQ(g->nodes[0]->outputs[0]->type.str(), "f32[1,2,4,4,3]");
  EXPECT_EQ(g->outputs[0]->type.str(), "f32[1,2,1,1,1]");
}

TEST(MapWindows, GlobalLpPoolIsLpPoolOverTheWholePlane) {
  Model m(2);
  m.input("x", {1, 2, 3, 5});
  setInt(m.node("GlobalLpPool", {"x"}, {"y"}), "p", 3);
  m.output("y");
  auto g = m.import();
  const Node& p = onlyNode(*g);
  EXPECT_EQ(p.op, "LpPool");
  EXPECT_EQ(p.ints("kernel_shape"), (Dims{3, 5}));
  EXPECT_EQ(p.ints("pads"), (Dims{0, 0, 0, 0}));
  EXPECT_EQ(p.i("p"), 3);
  EXPECT_EQ(g->outputs[0]->type.str(), "f32[1,2,1,1]");
}

TEST(MapWindows, RejectsAttributesOfTheWrongLength) {
  Model m(12);
  m.input("x", {1, 1, 5, 5});
  onnx::NodeProto* n = m.node("MaxPool", {"x"}, {"y"});
  setInts(n, "kernel_shape", {2, 2});
  setInts(n, "strides", {2});
  m.output("y");
  std::string err = m.importError();
  EXPECT_NE(err.find("node 'n' (MaxPool"), std::string::npos) << err;
  EXPECT_NE(err.find("strides [2] must have 2 values"), std::string::npos) << err;
}

TEST(MapConvTranspose, OutputShapeBecomesOutputPadding) {
  Model m(11);
  m.input("x", {1, 1, 3, 3});
  m.floats("w", {1, 2, 3, 3}, std::vector<float>(18, 1));
  onnx::NodeProto* n = m.node("ConvTranspose", {"x", "w"}, {"y"});
  setInts(n, "strides", {3, 2});
  setInts(n, "output_shape", {10, 8});
  m.output("y");
  auto g = m.import();
  const Node& c = onlyNode(*g);
  // Natural extents 9 and 7: one more bias-only position on each dim.
  EXPECT_EQ(c.ints("pads"), (Dims{0, 0, 0, 0}));
  EXPECT_EQ(c.ints("output_padding"), (Dims{1, 1}));
  EXPECT_EQ(c.i("group"), 1);
  EXPECT_EQ(g->outputs[0]->type.str(), "f32[1,2,10,8]");
}

TEST(MapConvTranspose, ShorterOutputShapePadsTheBeginningFirst) {
  Model m(11);
  m.input("x", {1, 1, 3, 3});
  m.floats("w", {1, 2, 3, 3}, std::vector<float>(18, 1));
  onnx::NodeProto* n = m.node("ConvTranspose", {"x", "w"}, {"y"});
  setInts(n, "strides", {2, 2});
  setInts(n, "pads", {3, 3, 3, 3});  // ignored: output_shape decides
  setInts(n, "output_shape", {5, 6});
  m.output("y");
  auto g = m.import();
  // Natural 7: two pads split 1 / 1, one pad at the beginning (as ONNX Runtime).
  EXPECT_EQ(onlyNode(*g).ints("pads"), (Dims{1, 1, 1, 0}));
  EXPECT_EQ(onlyNode(*g).ints("output_padding"), (Dims{0, 0}));
  EXPECT_EQ(g->outputs[0]->type.str(), "f32[1,2,5,6]");
}

TEST(MapConvTranspose, SameUpperPadsTheEnd) {
  Model m(11);
  m.input("x", {1, 1, 3, 3});
  m.floats("w", {1, 2, 3, 3}, std::vector<float>(18, 1));
  onnx::NodeProto* n = m.node("ConvTranspose", {"x", "w"}, {"y"});
  setInts(n, "strides", {2, 2});
  setString(n, "auto_pad", "SAME_UPPER");
  m.output("y");
  auto g = m.import();
  // Natural 2 * 2 + 3 = 7, wanted 3 * 2 = 6: one pad, at the end.
  EXPECT_EQ(onlyNode(*g).ints("pads"), (Dims{0, 0, 1, 1}));
  EXPECT_EQ(g->outputs[0]->type.str(), "f32[1,2,6,6]");
}

}  // namespace
}  // namespace nanoc::onnx_import
