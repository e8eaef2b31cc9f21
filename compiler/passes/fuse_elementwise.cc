#include "compiler/passes/fuse_elementwise.h"

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compiler/ops/elementwise_table.h"
#include "compiler/ops/fused_elementwise.h"
#include "compiler/passes/gpu_placement.h"

namespace nanoc {
namespace {

bool fusable(const Node* node) {
  const ElementwiseOp* op = node ? findElementwise(node->op) : nullptr;
  if (!op || !fusableElementwise(*op) || node->outputs.size() != 1) return false;
  if (!node->outputs[0] || node->outputs[0]->type.dtype != DType::F32) return false;
  for (const Value* in : node->inputs)
    if (!in || in->type.dtype != DType::F32) return false;
  return !node->inputs.empty();
}

}  // namespace

int fuseElementwiseChains(Graph& graph) {
  std::map<const Value*, int> uses = countUses(graph);
  std::map<const Node*, size_t> position;
  for (size_t at = 0; at < graph.nodes.size(); ++at) position[graph.nodes[at].get()] = at;
  int folded = 0;
  for (size_t at = graph.nodes.size(); at-- > 0;) {
    Node* root = graph.nodes[at].get();
    if (!root || !fusable(root)) continue;
    const TensorType& type = root->outputs[0]->type;
    // The tree: the root, then producers taken in while they qualify.
    std::vector<Node*> members = {root};
    for (size_t m = 0; m < members.size() && members.size() < kMaxElementwiseSteps; ++m)
      for (Value* in : members[m]->inputs) {
        Node* p = in->producer;
        if (!p || !fusable(p) || uses[in] != 1 || in->type != type) continue;
        if (isGpuNode(*p) != isGpuNode(*root)) continue;  // one device per node
        if (std::find(members.begin(), members.end(), p) != members.end()) continue;
        if (members.size() == kMaxElementwiseSteps) break;
        members.push_back(p);
      }
    if (members.size() < 2) continue;
    // Steps in graph order; the root is last.
    std::sort(members.begin(), members.end(),
              [&](const Node* a, const Node* b) { return position[a] < position[b]; });
    std::vector<Value*> inputs;
    std::map<const Value*, int64_t> ref;  // a member's result -> -(step + 1)
    std::string ops;
    std::vector<int64_t> arity, operands;
    std::map<std::string, Attr> attrs;
    for (size_t s = 0; s < members.size(); ++s) {
      const Node* step = members[s];
      ops += (s ? "," : "") + step->op;
      arity.push_back(static_cast<int64_t>(step->inputs.size()));
      for (Value* in : step->inputs) {
        auto it = ref.find(in);
        if (it != ref.end()) {
          operands.push_back(it->second);
          continue;
        }
        auto found = std::find(inputs.begin(), inputs.end(), in);
        operands.push_back(found - inputs.begin());
        if (found == inputs.end()) inputs.push_back(in);
      }
      ref[step->outputs[0]] = -static_cast<int64_t>(s) - 1;
      for (const auto& [key, value] : step->attrs)
        if (key != kDeviceAttribute) attrs["s" + std::to_string(s) + "." + key] = value;
    }
    if (inputs.size() > kMaxElementwiseInputs) continue;
    attrs["ops"] = ops;
    attrs["arity"] = arity;
    attrs["operands"] = operands;
    if (isGpuNode(*root)) attrs[kDeviceAttribute] = std::string(kGpuDevice);
    // The root becomes the fused node (its name and result stay); the other
    // members go.
    for (Node* m : members)
      if (m != root) graph.nodes[position[m]].reset();
    root->op = "nanoc.Elementwise";
    root->inputs = inputs;
    root->attrs = std::move(attrs);
    folded += static_cast<int>(members.size()) - 1;
  }
  if (folded == 0) return 0;
  std::erase_if(graph.nodes, [](const std::unique_ptr<Node>& n) { return n == nullptr; });
  graph.removeUnusedValues();
  return folded;
}

}  // namespace nanoc
