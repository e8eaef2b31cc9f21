// Specialised Conv kernels that makeConvLowering (lower_conv.cc) dispatches
// to before its generic direct loop.
#pragma once

#include "compiler/codegen/cpu/lowering.h"
#include "compiler/ops/conv.h"

namespace nanoc::cpu {

// Depthwise 2-D Conv (group == C == M, one input channel per output
// channel), vectorized along the output row (lower_conv_depthwise.cc). Emits
// tasks [task_begin, task_end) with the generic lowering's tasks, one per
// (n, channel) plane, and returns true; returns false and emits nothing
// where it does not apply: not depthwise, more than kMaxDepthwiseTaps taps,
// a column stride other than 1 or 2, a target of fewer than 4 f32 lanes
// (scalar FPUs keep the generic loop), or pads so wide that the row edges
// would take too much code.
constexpr int64_t kMaxDepthwiseTaps = 49;
bool emitDepthwiseConv(KernelBuilder& kb, const ConvShape& s);

}  // namespace nanoc::cpu
