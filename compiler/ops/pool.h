// The geometry of MaxPool and AveragePool along one spatial axis, exactly as
// ONNX Runtime computes it (see README.md). Shared by the shape rule, the
// reference implementation and the code generator.
#pragma once

#include <cstdint>

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

}  // namespace nanoc
