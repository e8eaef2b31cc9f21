// Constant folding: a node whose present inputs are all constants, and whose
// op has a reference implementation, is evaluated at compile time and its
// outputs become constants.
#pragma once

#include "compiler/ir/graph.h"

namespace nanoc {

// Folds in graph order, so chains of constant nodes fold completely. Results
// larger than `max_bytes` stay computed at run time rather than bloat the
// object. Returns the number of nodes folded.
int foldConstants(Graph& graph, uint64_t max_bytes = 64ull << 20);

}  // namespace nanoc
