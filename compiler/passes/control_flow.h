// Control flow's graphs spliced into the node sequence, for the arena plan
// and the program (schema/program.fbs: IfThunk, LoopThunk). Runs after every
// other pass (compileGraph calls it); the graph it leaves is no longer SSA
// (both branches of an If define its outputs) and is not verified again.
//
// An If becomes
//   nanoc.If(cond)  then's nodes  Identity copies of then's outputs into the
//   If's outputs  nanoc.Else  else's nodes and copies  nanoc.EndIf(outputs)
// (where a branch's node is the one writer of its result, it writes the If's
// output itself and no copy follows)
// and a Loop
//   Identity copies of the initial values into the Loop's outputs (the
//   loop-carried state) and of cond into a state bool
//   nanoc.Loop(M, cond state) -> iteration   body's nodes
//   copies of the body's condition and carried values into the state (through
//   a temporary where a source shares the state's memory)
//   nanoc.EndLoop(state..., cond state, iteration)
// The body reads the state where the ONNX body reads its carried inputs, and
// each graph's inputs are its node's operands. The end markers read what
// must stay alive to their end, so the plan's live ranges hold them; the
// planner also keeps alive through a loop's end every value defined before
// the loop that the body reads (arena_plan.cc).
#pragma once

#include "compiler/ir/graph.h"

namespace nanoc {

// Whether any node of `graph` is an If or a Loop.
bool hasControlFlow(const Graph& graph);

// Splices every If and Loop (nested ones too) into `graph`'s node list as
// above, moving their graphs' nodes and values into it.
void flattenControlFlow(Graph& graph);

// The marker ops the splice makes.
inline bool isControlMarker(const Node& node) {
  return node.op == "nanoc.If" || node.op == "nanoc.Else" || node.op == "nanoc.EndIf" ||
         node.op == "nanoc.Loop" || node.op == "nanoc.EndLoop";
}

}  // namespace nanoc
