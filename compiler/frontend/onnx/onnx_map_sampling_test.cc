// The sampling mappings per opset: GridSample 16 (bilinear, bicubic, 4-D
// only), 20 and 22 onto the canonical GridSample; AffineGrid onto a MatMul
// of a constant base grid; and their errors.
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

TEST(MapGridSample, Opset16SpellsBilinearAndBicubic) {
  for (const char* mode : {"bilinear", "bicubic", "nearest"}) {
    Model m(16);
    m.input("x", {1, 2, 4, 5});
    m.input("g", {1, 3, 6, 2});
    onnx::NodeProto* n = m.node("GridSample", {"x", "g"}, {"y"});
    setString(n, "mode", mode);
    setInt(n, "align_corners", 1);
    m.output("y");
    auto g = m.import();
    const Node& s = onlyNode(*g);
    ASSERT_EQ(s.op, "GridSample");
    std::string want = std::string(mode) == "bilinear"  ? "linear"
                       : std::string(mode) == "bicubic" ? "cubic"
                                                        : "nearest";
    EXPECT_EQ(s.s("mode"), want);
    EXPECT_EQ(s.s("padding_mode"), "zeros");
    EXPECT_EQ(s.i("align_corners"), 1);
    EXPECT_EQ(g->outputs[0]->type.str(), "f32[1,2,3,6]");
  }
}

TEST(MapGridSample, DefaultsPerOpsetAnd3DFromOpset20) {
  Model m16(16);
  m16.input("x", {1, 2, 4, 5});
  m16.input("g", {1, 3, 6, 2});
  m16.node("GridSample", {"x", "g"}, {"y"});
  m16.output("y");
  EXPECT_EQ(onlyNode(*m16.import()).s("mode"), "linear");

  Model m22(22);
  m22.input("x", {1, 2, 3, 4, 5});
  m22.input("g", {1, 2, 2, 2, 3});
  onnx::NodeProto* n = m22.node("GridSample", {"x", "g"}, {"y"});
  setString(n, "padding_mode", "reflection");
  m22.output("y");
  auto g = m22.import();
  EXPECT_EQ(onlyNode(*g).s("mode"), "linear");
  EXPECT_EQ(onlyNode(*g).s("padding_mode"), "reflection");
  EXPECT_EQ(onlyNode(*g).i("align_corners"), 0);
  EXPECT_EQ(g->outputs[0]->type.str(), "f32[1,2,2,2,2]");
}

TEST(MapGridSample, Errors) {
  Model m(16);
  m.input("x", {1, 2, 3, 4, 5});
  m.input("g", {1, 2, 2, 2, 3});
  m.node("GridSample", {"x", "g"}, {"y"});
  m.output("y");
  EXPECT_NE(m.importError().find("X must be 4-D before opset 20"), std::string::npos)
      << m.importError();
  Model bad(20);
  bad.input("x", {1, 2, 4, 5});
  bad.input("g", {1, 3, 6, 2});
  setString(bad.node("GridSample", {"x", "g"}, {"y"}), "mode", "bilinear");
  bad.output("y");
  EXPECT_NE(bad.importError().find("mode 'bilinear'"), std::string::npos) << bad.importError();
}

TEST(MapAffineGrid, TwoAndThreeDimensionalGridsTakeTheConstantSize) {
  Model m(20);
  m.input("theta", {2, 2, 3});
  m.ints("size", {2, 3, 4, 5});
  setInt(m.node("AffineGrid", {"theta", "size"}, {"grid"}), "align_corners", 1);
  m.output("grid");
  auto g = m.import();
  const Node& a = onlyNode(*g);
  ASSERT_EQ(a.op, "AffineGrid");
  EXPECT_EQ(a.ints("size"), (Dims{2, 3, 4, 5}));
  EXPECT_EQ(a.i("align_corners"), 1);
  EXPECT_EQ(g->outputs[0]->type.str(), "f32[2,4,5,2]");

  Model m3(20);
  m3.input("theta", {1, 3, 4});
  m3.ints("size", {1, 1, 2, 3, 4});
  m3.node("AffineGrid", {"theta", "size"}, {"grid"});
  m3.output("grid");
  EXPECT_EQ(m3.import()->outputs[0]->type.str(), "f32[1,2,3,4,3]");
}

TEST(MapAffineGrid, SizeMustBeConstantAndMatchTheta) {
  Model m(20);
  m.input("theta", {1, 2, 3});
  m.input("size", {4});
  m.node("AffineGrid", {"theta", "size"}, {"grid"});
  m.output("grid");
  EXPECT_NE(m.importError().find("computed at run time"), std::string::npos) << m.importError();

  Model bad(20);
  bad.input("theta", {1, 2, 3});
  bad.ints("size", {1, 1, 2, 3, 4});
  bad.node("AffineGrid", {"theta", "size"}, {"grid"});
  bad.output("grid");
  EXPECT_NE(bad.importError().find("theta must be [1, 3, 4]"), std::string::npos)
      << bad.importError();
}

TEST(MapCol2Im, DefaultsAndConstantShapes) {
  Model m(18);
  m.input("x", {1, 4, 6});
  m.ints("image", {3, 4});
  m.ints("block", {2, 2});
  m.node("Col2Im", {"x", "image", "block"}, {"y"});
  m.output("y");
  auto g = m.import();
  const Node& c = onlyNode(*g);
  ASSERT_EQ(c.op, "Col2Im");
  EXPECT_EQ(c.ints("dilations"), (Dims{1, 1}));
  EXPECT_EQ(c.ints("strides"), (Dims{1, 1}));
  EXPECT_EQ(c.ints("pads"), (Dims{0, 0, 0, 0}));
  EXPECT_EQ(g->outputs[0]->type.str(), "f32[1,1,3,4]");

  Model bad(18);
  bad.input("x", {1, 4, 6});
  bad.input("image", {2});
  bad.ints("block", {2, 2});
  bad.node("Col2Im", {"x", "image", "block"}, {"y"});
  bad.output("y");
  EXPECT_NE(bad.importError().find("computed at run time"), std::string::npos) << bad.importError();
}

TEST(MapRoiAlign, Opset10IsOutputHalfPixelAndOpset16DefaultsToHalfPixel) {
  for (int64_t opset : {10, 16}) {
    Model m(opset);
    m.input("x", {1, 2, 8, 8});
    m.input("rois", {3, 4});
    m.ints("idx", {0, 0, 0});
    onnx::NodeProto* n = m.node("RoiAlign", {"x", "rois", "idx"}, {"y"});
    setInt(n, "output_height", 5);
    setString(n, "mode", "max");
    m.output("y");
    auto g = m.import();
    const Node& r = onlyNode(*g);
    ASSERT_EQ(r.op, "RoiAlign");
    EXPECT_EQ(r.i("half_pixel"), opset >= 16 ? 1 : 0);
    EXPECT_EQ(r.s("mode"), "max");
    EXPECT_EQ(r.i("sampling_ratio"), 0);
    EXPECT_EQ(r.f("spatial_scale"), 1.0);
    EXPECT_EQ(g->outputs[0]->type.str(), "f32[3,2,5,1]");
  }
}

TEST(MapDeformConv, DefaultsAndKernelShapeCheck) {
  Model m(19);
  m.input("x", {1, 2, 5, 5});
  m.input("w", {4, 2, 3, 3});
  m.input("off", {1, 18, 3, 3});
  m.node("DeformConv", {"x", "w", "off"}, {"y"});
  m.output("y");
  auto g = m.import();
  const Node& d = onlyNode(*g);
  ASSERT_EQ(d.op, "DeformConv");
  EXPECT_EQ(d.ints("pads"), (Dims{0, 0, 0, 0}));
  EXPECT_EQ(d.i("group"), 1);
  EXPECT_EQ(g->outputs[0]->type.str(), "f32[1,4,3,3]");

  Model bad(22);
  bad.input("x", {1, 2, 5, 5});
  bad.input("w", {4, 2, 3, 3});
  bad.input("off", {1, 18, 3, 3});
  setInts(bad.node("DeformConv", {"x", "w", "off"}, {"y"}), "kernel_shape", {2, 2});
  bad.output("y");
  EXPECT_NE(bad.importError().find("kernel_shape [2,2] is not W's [3,3]"), std::string::npos)
      << bad.importError();
}

}  // namespace
}  // namespace nanoc::onnx_import
