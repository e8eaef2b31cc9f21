// RoiAlign's canonical attributes and per-ROI geometry, shared by the shape
// rule, the reference and the CPU lowering. The arithmetic follows
// onnx/reference/ops/op_roi_align.py in double precision: each output bin
// averages (or takes the max of) a grid of bilinear samples whose size is
// sampling_ratio, or ceil(bin size) per axis when it is 0 (then it depends
// on the ROI, known only at run time).
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

#include "compiler/ir/graph.h"

namespace nanoc {

struct RoiAlignParams {
  bool max_mode = false;
  bool half_pixel = true;
  int64_t output_height = 1, output_width = 1;
  int64_t sampling_ratio = 0;
  double spatial_scale = 1;
};

// Reads and validates attributes and operands (X [N, C, H, W], rois [R, 4],
// batch_indices [R] int64); fails naming the node.
RoiAlignParams roiAlignParams(const Node& node);

}  // namespace nanoc
