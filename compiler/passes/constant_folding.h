// Constant folding: a node whose present inputs are all constants, and whose
// op has a reference implementation, is evaluated at compile time and its
// outputs become constants.
#pragma once

#include "compiler/ir/graph.h"

namespace nanoc {

// Evaluates `node` when its op has a reference implementation, every present
// input is a constant and its outputs total at most `max_bytes`. Its outputs
// then become constants (their names and uses unchanged, producer cleared)
// and the caller removes the node from its graph. Returns whether it folded.
bool foldNode(Node& node, uint64_t max_bytes);

// Folds in graph order, so chains of constant nodes fold completely. Results
// larger than `max_bytes` stay computed at run time rather than bloat the
// object. Returns the number of nodes folded.
int foldConstants(Graph& graph, uint64_t max_bytes = 64ull << 20);

}  // namespace nanoc
