// ONNX -> IR mappings of the sampling and image-patch operators: GridSample
// (opsets 16, 20, 22), AffineGrid (20), Col2Im (18), RoiAlign (10, 16, 22)
// and DeformConv (19, 22).
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "compiler/frontend/onnx/onnx_mapping_util.h"
#include "compiler/frontend/onnx/onnx_node_importer.h"
#include "compiler/ir/error.h"

namespace nanoc::onnx_import {
namespace {

void mapGridSample(NodeImporter& n) {
  Value* x = n.requiredInput(0, "X");
  Value* grid = n.requiredInput(1, "grid");
  // Opset 16 spells the modes bilinear and bicubic and is 4-D only.
  std::string mode = n.stringAttr("mode").value_or(n.opset() < 20 ? "bilinear" : "linear");
  if (n.opset() < 20) {
    if (mode == "bilinear")
      mode = "linear";
    else if (mode == "bicubic")
      mode = "cubic";
    else if (mode != "nearest")
      n.fail("mode '" + mode + "' is not bilinear, nearest or bicubic");
    if (rankOf(x) != 4) n.fail("X must be 4-D before opset 20, got " + x->type.str());
  }
  n.emitResult("GridSample", {x, grid},
               {{"mode", mode},
                {"padding_mode", n.stringAttr("padding_mode").value_or("zeros")},
                {"align_corners", int64_t{n.intAttr("align_corners", 0) != 0}}});
}

// AffineGrid (20): size must be a constant; the IR op computes the base grid
// inline.
void mapAffineGrid(NodeImporter& n) {
  Value* theta = n.requiredInput(0, "theta");
  std::vector<int64_t> size = constantInts(n, n.requiredInput(1, "size"), "size");
  n.emitResult("AffineGrid", {theta},
               {{"size", size}, {"align_corners", int64_t{n.intAttr("align_corners", 0) != 0}}});
}

// Col2Im (18): image_shape and block_shape must be constants; the window
// attributes get their defaults.
void mapCol2Im(NodeImporter& n) {
  Value* x = n.requiredInput(0, "input");
  std::vector<int64_t> image = constantInts(n, n.requiredInput(1, "image_shape"), "image_shape");
  std::vector<int64_t> block = constantInts(n, n.requiredInput(2, "block_shape"), "block_shape");
  const size_t r = image.size();
  if (r == 0 || block.size() != r)
    n.fail("image_shape " + dimsStr(image) + " and block_shape " + dimsStr(block) +
           " must have the same, nonzero length");
  auto attr = [&](const char* key, size_t count, int64_t fallback) {
    std::vector<int64_t> v = n.intsAttr(key).value_or(std::vector<int64_t>(count, fallback));
    if (v.size() != count)
      n.fail(std::string(key) + " " + dimsStr(v) + " must have " + std::to_string(count) +
             " values");
    return v;
  };
  n.emitResult("Col2Im", {x},
               {{"image_shape", image},
                {"block_shape", block},
                {"dilations", attr("dilations", r, 1)},
                {"strides", attr("strides", r, 1)},
                {"pads", attr("pads", 2 * r, 0)}});
}

// RoiAlign (10, 16, 22): coordinate_transformation_mode arrived in opset 16
// with half_pixel as its default; opset 10 behaves as output_half_pixel.
void mapRoiAlign(NodeImporter& n) {
  std::string ctm = n.opset() >= 16
                        ? n.stringAttr("coordinate_transformation_mode").value_or("half_pixel")
                        : "output_half_pixel";
  if (ctm != "half_pixel" && ctm != "output_half_pixel")
    n.fail("coordinate_transformation_mode '" + ctm + "' is not half_pixel or output_half_pixel");
  n.emitResult(
      "RoiAlign",
      {n.requiredInput(0, "X"), n.requiredInput(1, "rois"), n.requiredInput(2, "batch_indices")},
      {{"mode", n.stringAttr("mode").value_or("avg")},
       {"half_pixel", int64_t{ctm == "half_pixel"}},
       {"output_height", n.intAttr("output_height", 1)},
       {"output_width", n.intAttr("output_width", 1)},
       {"sampling_ratio", n.intAttr("sampling_ratio", 0)},
       {"spatial_scale", n.floatAttr("spatial_scale", 1.0)}});
}

// DeformConv (19, 22), 2-D: kernel_shape, if given, must be W's; the window
// attributes get their defaults.
void mapDeformConv(NodeImporter& n) {
  Value* x = n.requiredInput(0, "X");
  Value* w = n.requiredInput(1, "W");
  Value* offset = n.requiredInput(2, "offset");
  if (rankOf(x) != 4 || rankOf(w) != 4)
    n.fail("only 2-D DeformConv is supported (X [N, C, H, W]), got X " + x->type.str());
  std::vector<int64_t> kernel(w->type.dims.begin() + 2, w->type.dims.end());
  if (std::optional<std::vector<int64_t>> ks = n.intsAttr("kernel_shape"))
    if (*ks != kernel) n.fail("kernel_shape " + dimsStr(*ks) + " is not W's " + dimsStr(kernel));
  auto attr = [&](const char* key, size_t count, int64_t fallback) {
    std::vector<int64_t> v = n.intsAttr(key).value_or(std::vector<int64_t>(count, fallback));
    if (v.size() != count)
      n.fail(std::string(key) + " " + dimsStr(v) + " must have " + std::to_string(count) +
             " values");
    return v;
  };
  std::vector<Value*> inputs = {x, w, offset, n.input(3), n.input(4)};
  if (!inputs[4]) inputs.pop_back();
  if (inputs.size() == 4 && !inputs[3]) inputs.pop_back();
  n.emitResult("DeformConv", inputs,
               {{"dilations", attr("dilations", 2, 1)},
                {"strides", attr("strides", 2, 1)},
                {"pads", attr("pads", 4, 0)},
                {"group", n.intAttr("group", 1)},
                {"offset_group", n.intAttr("offset_group", 1)}});
}

}  // namespace

MappingList samplingMappings() {
  return {
      {"AffineGrid", mapAffineGrid}, {"Col2Im", mapCol2Im},     {"DeformConv", mapDeformConv},
      {"GridSample", mapGridSample}, {"RoiAlign", mapRoiAlign},
  };
}

}  // namespace nanoc::onnx_import
