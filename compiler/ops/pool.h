// The geometry of the pooling windows (MaxPool, MaxPoolWithIndices,
// AveragePool, LpPool) over [N, C, spatial...], exactly as ONNX Runtime
// computes it (see README.md). Shared by the shape rules, the reference
// implementations and the code generator.
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/ir/graph.h"

namespace nanoc {

struct PoolAxis {
  int64_t size;  // input extent n
  int64_t kernel, dilation, stride, pad_begin, pad_end;

  int64_t effectiveKernel() const { return (kernel - 1) * dilation + 1; }
};

// Output extent; requires size + pad_begin + pad_end >= effectiveKernel().
// With ceil_mode, a last window that would start inside the end padding is
// dropped.
int64_t poolOutputSize(const PoolAxis& axis, bool ceil_mode);

// The number of taps of the window for output index `out` that fall inside
// [lo, hi), in input coordinates. AveragePool divides by this with
// [0, size) when count_include_pad = 0, and [-pad_begin, size + pad_end) when
// 1: never by taps in the extra end padding that ceil_mode adds.
int64_t poolTapsWithin(const PoolAxis& axis, int64_t out, int64_t lo, int64_t hi);

// A pooling node's decoded canonical attributes: kernel_shape, strides,
// dilations (one per spatial dim), pads (begins, then ends), ceil_mode.
struct PoolShape {
  int64_t n = 0, c = 0;
  std::vector<PoolAxis> axes;  // one per spatial dim
  std::vector<int64_t> out;    // output spatial extents
  bool ceil_mode = false;

  int64_t planes() const { return n * c; }
  int64_t inPlane() const;                  // elements of one input (n, c) plane
  int64_t outPlane() const;                 // elements of one output (n, c) plane
  std::vector<int64_t> outputDims() const;  // [N, C, out...]
};

// Validates and decodes; fails naming the node.
PoolShape poolShape(const Node& node);

}  // namespace nanoc
