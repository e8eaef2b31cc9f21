// The decoded canonical attributes of Conv and ConvTranspose over
// [N, C, spatial...], shared by their shape rules, references and lowerings.
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/ir/graph.h"

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

}  // namespace nanoc
