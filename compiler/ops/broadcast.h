// Numpy multidirectional broadcasting, the one definition shared by the shape
// rules, the reference implementations and the code generator.
#pragma once

#include <cstdint>
#include <vector>

namespace nanoc {

// The broadcast shape of `a` and `b`: shapes are right-aligned, and each pair
// of dims must be equal or contain a 1. Throws CompileError on a mismatch (the
// message names both shapes; callers add the node).
std::vector<int64_t> broadcastShapes(const std::vector<int64_t>& a, const std::vector<int64_t>& b);

// Element strides for reading a dense row-major tensor of `shape` as if it had
// the (broadcast) shape `out`: one stride per dim of `out`, 0 along the dims
// that `shape` lacks or has as 1. `shape` must broadcast to `out`.
std::vector<int64_t> broadcastStrides(const std::vector<int64_t>& shape,
                                      const std::vector<int64_t>& out);

}  // namespace nanoc
