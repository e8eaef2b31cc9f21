// Dead-code elimination: removes nodes none of whose outputs reach a graph
// output, then the values nothing refers to any more.
#pragma once

#include "compiler/ir/graph.h"

namespace nanoc {

// Returns the number of nodes removed.
int eliminateDeadCode(Graph& graph);

}  // namespace nanoc
