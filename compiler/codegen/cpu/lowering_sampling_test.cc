// The sampling lowerings against the ops' reference implementations on
// random inputs: GridSample in every mode and padding, with and without
// align_corners, over 1 to 3 spatial dims, grids reaching outside the image,
// and f64 / f16 operands.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "compiler/codegen/cpu/kernel_test_util.h"

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

}  // namespace
}  // namespace nanoc::cpu
