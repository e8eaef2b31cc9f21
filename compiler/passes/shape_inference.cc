#include "compiler/passes/shape_inference.h"

#include "compiler/ir/error.h"
#include "compiler/ir/op_registry.h"

namespace nanoc {

void inferNode(Node& node) {
  std::string where = "node '" + node.name + "' (" + node.op + ")";
  const OpSchema* schema = findOp(node.op);
  if (!schema) throw CompileError(where + ": unknown op");
  int n = static_cast<int>(node.inputs.size());
  if (n < schema->min_inputs || n > schema->max_inputs)
    throw CompileError(where + ": has " + std::to_string(n) + " inputs, expected " +
                       std::to_string(schema->min_inputs) + ".." +
                       std::to_string(schema->max_inputs));
  for (const Value* in : node.inputs)
    if (in && !in->typed) throw CompileError(where + ": operand '" + in->name + "' has no type");
  std::vector<TensorType> types = schema->infer(node);
  if (types.size() != node.outputs.size())
    throw CompileError(where + ": shape rule gave " + std::to_string(types.size()) +
                       " outputs for " + std::to_string(node.outputs.size()));
  for (size_t i = 0; i < types.size(); ++i) {
    node.outputs[i]->type = types[i];
    node.outputs[i]->typed = true;
  }
}

void inferShapes(Graph& graph) {
  for (auto& node : graph.nodes) inferNode(*node);
}

}  // namespace nanoc
