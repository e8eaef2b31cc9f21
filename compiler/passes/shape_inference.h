// Shape inference: sets every node output's type from its op's shape rule
// (compiler/ops). Static shapes only.
#pragma once

#include "compiler/ir/graph.h"

namespace nanoc {

// Types the outputs of one node whose inputs are typed. Throws CompileError
// naming the node and op (unknown op, wrong arity, invalid shapes).
void inferNode(Node& node);

// Types every node of the graph, in order.
void inferShapes(Graph& graph);

}  // namespace nanoc
