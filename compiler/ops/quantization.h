// The quantization family (QuantizeLinear, DequantizeLinear,
// DynamicQuantizeLinear, MatMulInteger, QLinearMatMul, ConvInteger,
// QLinearConv): the geometry their shape rules, references and CPU lowerings
// share, so each rule is written once.
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/ir/graph.h"

namespace nanoc {

// Where an element of x finds its scale and zero point. x is viewed as
// [outer, axis_dim, inner] around the quantization axis; element (o, a, i)
// reads scale element
//   o * outer_stride + (a / block) * axis_stride + i * inner_stride.
// Per-tensor: every stride 0 (outer = axis_dim = 1, inner = numel).
// Per-axis:   axis_stride 1, block 1.
// Blocked:    the scale is x's shape with ceil(axis_dim / block) along the
//             axis; strides are that shape's row-major strides.
struct QuantGranularity {
  int64_t outer = 1, axis_dim = 1, inner = 1;
  int64_t block = 1;
  int64_t outer_stride = 0, axis_stride = 0, inner_stride = 0;

  int64_t scaleIndex(int64_t o, int64_t a, int64_t i) const {
    return o * outer_stride + (a / block) * axis_stride + i * inner_stride;
  }
};

// Checks scale (input 1) and the optional zero point (input 2) of a
// QuantizeLinear/DequantizeLinear node against x (input 0), its `axis` and
// `block_size` attributes (block_size 0: per-tensor or per-axis), and returns
// the granularity. A scale of one element is per-tensor whatever its rank.
QuantGranularity quantGranularity(const Node& node);

// The saturation range of an integer quantized dtype (i8, u8, i16, u16, i32,
// i4, u4, i2, u2); fails naming the node for any other dtype.
struct QuantRange {
  int64_t lo = 0, hi = 0;
};
QuantRange quantRange(const Node& node, DType dtype);

// The float types QuantizeLinear quantizes to and DequantizeLinear from: the
// float8 types and f4e2m1 (converted as Cast does, no integer range).
bool isQuantizedFloat(DType dtype);

// Rounds a float to the nearest integer, ties to even, as ONNX quantization
// does (std::nearbyint under the default rounding mode, spelled out).
double roundHalfEven(double v);

// Rounds `v` to the precision of `dtype` (f16, bf16, f32; f64 unchanged).
double roundTo(DType dtype, double v);

// quantize(v) = clamp(roundHalfEven(v) + zero_point, lo, hi); NaN gives lo.
int64_t saturateQuantized(double rounded_plus_zero_point, QuantRange range);

// The integer matrix product's dims: numpy matmul (1-D operands promoted, the
// added dim removed, batch dims broadcast), as MatMul's shape rule.
struct IntegerProductShape {
  int64_t m = 0, k = 0, n = 0;
  std::vector<int64_t> batch;           // broadcast batch dims
  std::vector<int64_t> a_batch_stride;  // per batch dim, elements of A (0: broadcast)
  std::vector<int64_t> b_batch_stride;
  int64_t batches = 1;
  std::vector<int64_t> out;
};
IntegerProductShape integerProductShape(const Node& node, size_t a_index, size_t b_index);

// An N-D convolution window over X [N, C, spatial...] and W [M, C/group,
// kernel...], with the canonical attributes group, kernel_shape[k],
// pads[2k] (every begin, then every end), strides[k], dilations[k].
struct IntegerConvShape {
  int64_t n = 0, c = 0, m = 0, group = 1;
  std::vector<int64_t> in, kernel, out;  // spatial dims
  std::vector<int64_t> pads, strides, dilations;
  int64_t cPerGroup() const { return c / group; }
  int64_t mPerGroup() const { return m / group; }
};
IntegerConvShape integerConvShape(const Node& node, size_t x_index, size_t w_index);

// The scalar (or one-element) or per-`count` vector operand `index`: its
// element count (1 or count), failing otherwise. Absent optional operands
// count as 1 (a zero point of 0).
int64_t scalarOrVector(const Node& node, size_t index, const char* role, int64_t count,
                       const char* count_what);

// A scale or zero point of a matrix product's a (per row: `row`) or b (per
// column): scalar, [count], or the spec's N-D form [1, ..., count, 1] (a) or
// [1, ..., 1, count] (b). Returns 1 or count.
int64_t rowOrColumnVector(const Node& node, size_t index, const char* role, int64_t count,
                          bool row);

}  // namespace nanoc
