#include "compiler/passes/legalize_outputs.h"

#include <set>
#include <utility>

namespace nanoc {

void legalizeOutputs(Graph& graph) {
  std::set<const Value*> seen;
  for (Value*& out : graph.outputs) {
    if (out->producer && seen.insert(out).second) continue;
    Node* copy = graph.addNode("Identity", out->name + "_copy", {out}, 1);
    copy->outputs[0]->type = out->type;
    copy->outputs[0]->typed = true;
    // The output keeps the model's name: a constant (a folded Shape, say)
    // trades names with its copy. A graph input keeps its own, and a
    // repeated output is a second name for the same value.
    if (out->isConstant() && !seen.count(out)) std::swap(out->name, copy->outputs[0]->name);
    out = copy->outputs[0];
    seen.insert(out);
  }
}

}  // namespace nanoc
