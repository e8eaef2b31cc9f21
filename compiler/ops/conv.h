// The decoded canonical attributes of Conv and ConvTranspose over
// [N, C, spatial...], shared by their shape rules, references and lowerings.
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc {

struct ConvShape {
  int64_t n = 0, c = 0, m = 0;  // batch, input and output channels
  int64_t group = 1;
  std::vector<int64_t> in, kernel, out;  // spatial extents, one per spatial dim
  std::vector<int64_t> strides, dilations;
  std::vector<int64_t> pads;            // begins, then ends
  std::vector<int64_t> output_padding;  // ConvTranspose only
  bool has_bias = false;

  size_t rank() const { return in.size(); }  // spatial dims
  int64_t cPerGroup() const { return c / group; }
  int64_t mPerGroup() const { return m / group; }
  std::vector<int64_t> outputDims() const;  // [N, M, out...]
};

// Conv: X [N, C, in...], W [M, C/group, kernel...], B [M]?;
// out = (in + pad_begin + pad_end - dilated kernel) / stride + 1.
ConvShape convShape(const Node& node);

// ConvTranspose: X [N, C, in...], W [C, M/group, kernel...], B [M]?;
// out = stride * (in - 1) + dilated kernel - pad_begin - pad_end + output_padding.
ConvShape convTransposeShape(const Node& node);

// The checks both share (ranks, dtype, window attributes, group, bias), with
// W's channel dims read the way the op lays them out; leaves `out` empty.
ConvShape decodeConvWindow(const Node& node, bool transpose);

// Row-major strides of `dims`.
inline std::vector<int64_t> convStridesOf(const std::vector<int64_t>& dims) {
  std::vector<int64_t> st(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) st[i - 1] = st[i] * dims[i];
  return st;
}

// Calls fn(o, t, i) for every spatial output position o and kernel tap t
// (flat indices) whose input position lies inside the input, i its flat
// index: Conv's gather, for the host references. With `transpose`, the roles
// swap: fn(i, t, o) for input position i and tap t feeding output
// o = i * stride + t * dilation - pad_begin inside the output.
template <typename Fn>
void forEachConvTap(const ConvShape& s, bool transpose, Fn fn) {
  const size_t k = s.rank();
  const std::vector<int64_t>& from = transpose ? s.in : s.out;
  const std::vector<int64_t>& to = transpose ? s.out : s.in;
  std::vector<int64_t> to_stride = convStridesOf(to);
  int64_t from_total = product(from, 0, k), taps = product(s.kernel, 0, k);
  std::vector<int64_t> p(k), t(k);
  for (int64_t f = 0; f < from_total; ++f) {
    int64_t rem = f;
    for (size_t i = k; i-- > 0;) p[i] = rem % from[i], rem /= from[i];
    for (int64_t tap = 0; tap < taps; ++tap) {
      rem = tap;
      for (size_t i = k; i-- > 0;) t[i] = rem % s.kernel[i], rem /= s.kernel[i];
      int64_t at = 0;
      bool inside = true;
      for (size_t i = 0; i < k && inside; ++i) {
        int64_t q = p[i] * s.strides[i] - s.pads[i] + t[i] * s.dilations[i];
        inside = q >= 0 && q < to[i];
        at += q * to_stride[i];
      }
      if (inside) fn(f, tap, at);
    }
  }
}

}  // namespace nanoc
