#include "compiler/passes/dead_code_elimination.h"

#include <set>

namespace nanoc {

int eliminateDeadCode(Graph& graph) {
  std::set<const Value*> live(graph.outputs.begin(), graph.outputs.end());
  std::vector<bool> keep(graph.nodes.size(), false);
  // Nodes are in topological order, so one backward sweep finds every node
  // that feeds a live value.
  for (size_t i = graph.nodes.size(); i-- > 0;) {
    const Node& node = *graph.nodes[i];
    for (const Value* out : node.outputs) keep[i] = keep[i] || live.count(out);
    if (keep[i]) live.insert(node.inputs.begin(), node.inputs.end());
  }
  std::vector<std::unique_ptr<Node>> kept;
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    if (keep[i]) kept.push_back(std::move(graph.nodes[i]));
  int removed = static_cast<int>(graph.nodes.size() - kept.size());
  graph.nodes = std::move(kept);
  graph.removeUnusedValues();
  return removed;
}

}  // namespace nanoc
