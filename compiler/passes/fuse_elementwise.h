// Fuses chains of f32 elementwise ops into one nanoc.Elementwise node
// (ops/fused_elementwise.h): one loop over the output, the intermediates in
// registers, instead of a kernel and a pass over memory per op.
//
// From each elementwise op (the root, last in graph order first), the pass
// takes in the producers of its operands while each is itself a fusable
// elementwise op (fusableElementwise: f32 operands and result) whose result
// has the root's exact type (no broadcast in the middle of the chain), has
// exactly one use, and is not a graph output; then their producers, and so
// on: a tree of up to kMaxElementwiseSteps ops with up to
// kMaxElementwiseInputs distinct outside operands (which may broadcast, and
// may be read by several steps, as GELU reads x twice). A tree of two ops or
// more becomes one node in the root's place, with the root's name and
// result; the other ops go away. Runs after the epilogue fusions, which take
// what follows a Conv or a matrix product first. After GPU placement
// (passes/pipeline.h's runGpuPasses) a chain stays on one side: its ops all
// run on the GPU or all on the host, and the fused node keeps their device.
#pragma once

#include "compiler/ir/graph.h"

namespace nanoc {

// Returns the number of nodes folded away.
int fuseElementwiseChains(Graph& graph);

}  // namespace nanoc
