// Gemm's dimensions, decoded and checked in one place for the op's shape
// rule, its reference and its CPU lowering.
#pragma once

#include <cstdint>

#include "compiler/ir/graph.h"

namespace nanoc {

struct GemmShape {
  int64_t m, k, n;  // op(A) is [m, k], op(B) is [k, n]
  bool trans_a, trans_b;
};

// Checks A, B (2-D f32, matching inner dims), C (absent or unidirectionally
// broadcastable to [m, n]) and alpha/beta (finite); throws CompileError
// naming the node.
GemmShape gemmShape(const Node& node);

}  // namespace nanoc
