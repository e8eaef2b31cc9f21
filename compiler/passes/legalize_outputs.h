// Gives every graph output a producing node of its own. The runtime writes
// outputs straight into the caller's memory, so an output that is a graph
// input, a constant, or the same value as another output needs a copy node.
#pragma once

#include "compiler/ir/graph.h"

namespace nanoc {

void legalizeOutputs(Graph& graph);

}  // namespace nanoc
