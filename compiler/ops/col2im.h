// Col2Im's canonical attributes, checked, and the geometry derived from them
// (shared by the shape rule, the reference and the CPU lowering).
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/ir/graph.h"

namespace nanoc {

struct Col2ImParams {
  std::vector<int64_t> image, block, dilations, strides, pads;  // pads: begins, then ends
  std::vector<int64_t> blocks;                                  // block positions per spatial axis
  int64_t K = 1;                                                // product of block
  int64_t L = 1;                                                // product of blocks
  int64_t C = 0;                                                // output channels: input dim 1 / K
};

Col2ImParams col2ImParams(const Node& node);

}  // namespace nanoc
