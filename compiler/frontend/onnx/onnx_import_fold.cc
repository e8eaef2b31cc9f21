#include "compiler/frontend/onnx/onnx_import_fold.h"

#include "compiler/ir/op_registry.h"

namespace nanoc::onnx_import {

Value* foldIfConstant(NodeImporter& n, Value* v) {
  Graph& g = n.graph();
  if (g.nodes.empty() || v->producer != g.nodes.back().get()) return v;
  Node& node = *g.nodes.back();
  const OpSchema* schema = findOp(node.op);
  if (!schema || !schema->reference) return v;
  for (const Value* in : node.inputs)
    if (in && !in->isConstant()) return v;
  uint64_t bytes = 0;
  for (const Value* out : node.outputs) bytes += out->type.bytes();
  if (bytes > kImportFoldBytes) return v;
  std::vector<const void*> ins;
  for (const Value* in : node.inputs) ins.push_back(in ? in->data->data() : nullptr);
  std::vector<std::vector<uint8_t>> results;
  std::vector<void*> outs;
  for (const Value* out : node.outputs) results.emplace_back(out->type.bytes());
  for (auto& r : results) outs.push_back(r.data());
  schema->reference(node, ins, outs);
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    node.outputs[i]->producer = nullptr;
    node.outputs[i]->data = std::make_shared<const std::vector<uint8_t>>(std::move(results[i]));
  }
  g.nodes.pop_back();
  return v;
}

void emitResultFolded(NodeImporter& n, const std::string& op, std::vector<Value*> inputs,
                      std::map<std::string, Attr> attrs) {
  n.emitResult(op, std::move(inputs), std::move(attrs));
  foldIfConstant(n, n.outputs()[0]);
}

Value* emitFolded(NodeImporter& n, const std::string& op, std::vector<Value*> inputs,
                  std::map<std::string, Attr> attrs, const std::string& suffix,
                  const std::string& output_name) {
  return foldIfConstant(n, n.emit(op, std::move(inputs), std::move(attrs), suffix, output_name));
}

}  // namespace nanoc::onnx_import
