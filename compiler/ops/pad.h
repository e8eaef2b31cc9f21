// Pad's decoded mode and its per-axis source rule, shared by the shape rule,
// the reference (compiler/ops/pad.cc) and the CPU lowering.
#pragma once

#include <cstdint>

#include "compiler/ir/graph.h"

namespace nanoc {

enum class PadMode { Constant, Edge, Reflect, Wrap };

// The node's `mode` attribute; fails naming the node on an unknown mode.
PadMode padMode(const Node& node);

// The input coordinate that output coordinate o reads along an axis of size
// `dim` >= 1, given i = o - pad_begin; -1 where it reads the constant.
int64_t padSource(PadMode mode, int64_t i, int64_t dim);

// One axis of a Pad: a negative pad crops first (as ONNX Runtime does), then
// the positive pads extend what is left, so edge, reflect and wrap see the
// cropped axis. Output coordinate o reads crop_begin + padSource(mode, o -
// pad_begin, kept).
struct PadAxis {
  int64_t pad_begin = 0;   // >= 0
  int64_t crop_begin = 0;  // >= 0
  int64_t kept = 0;        // input elements left after cropping
};
PadAxis padAxis(int64_t dim, int64_t begin, int64_t end);

}  // namespace nanoc
