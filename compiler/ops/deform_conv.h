// DeformConv's canonical attributes, checked, and its 2-D geometry, shared by
// the shape rule, the reference and the CPU lowering. Each kernel tap of
// output (i, j) samples X bilinearly (zeros outside) at its regular position
// plus a learned offset, times an optional mask, as
// onnx/reference/ops/op_deform_conv.py.
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/ir/graph.h"

namespace nanoc {

struct DeformConvParams {
  int64_t N = 0, C = 0, H = 0, W = 0;      // X
  int64_t OC = 0, Cg = 0, kH = 0, kW = 0;  // weights: [OC, C / group, kH, kW]
  int64_t OH = 0, OW = 0;
  int64_t group = 1, offset_group = 1;
  std::vector<int64_t> dilations, strides, pads;  // pads: top, left, bottom, right
  bool has_bias = false, has_mask = false;
};

DeformConvParams deformConvParams(const Node& node);

}  // namespace nanoc
