// Resize as a separable filter: along each axis, every output position reads
// a fixed number of input positions (taps) with weights that depend only on
// that axis's geometry. The taps follow ONNX's reference implementation
// (onnx/reference/ops/op_resize.py) exactly, so the shape rule, the host
// reference and the code generator share one computation of them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"

namespace nanoc {

// The canonical attributes of a Resize node (compiler/ops/README.md), checked.
struct ResizeParams {
  std::string mode;                            // nearest, linear, cubic
  std::string coordinate_transformation_mode;  // half_pixel, align_corners, ...
  std::string nearest_mode;                    // round_prefer_floor, ..., floor, ceil
  double cubic_coeff_a = -0.75;
  bool exclude_outside = false;
  double extrapolation_value = 0;
  bool antialias = false;
  std::vector<int64_t> sizes;  // output dims, one per axis
  std::vector<double> scales;  // one per axis, as the coordinate transform uses them
  std::vector<double> roi;     // starts then ends, one per axis each
};

// Reads and validates the attributes against the node's input; fails naming
// the node.
ResizeParams resizeParams(const Node& node);

// The taps of one axis: output position o reads input positions
// index[o * taps + t] (already clamped into [0, in)) with weight[o * taps + t].
// `identity` axes read position o with weight 1 (and carry no tables);
// nearest-mode axes have one tap of weight 1. Where `outside[o]` is set
// (tf_crop_and_resize only) the output is extrapolation_value instead.
struct ResizeAxis {
  bool identity = false;
  int64_t taps = 1;
  std::vector<int64_t> index;
  std::vector<double> weight;
  std::vector<uint8_t> outside;  // empty when no position is outside
};

// Fails (naming the node) when the tables would be unreasonably large, as
// antialiasing with a tiny scale makes them.
ResizeAxis resizeAxis(const Node& node, const ResizeParams& params, size_t axis, int64_t in);

}  // namespace nanoc
